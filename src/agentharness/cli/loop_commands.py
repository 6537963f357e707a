"""`bootcamp` commands of this group (registered on the app in cli/main.py)."""

from __future__ import annotations
