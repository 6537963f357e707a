"""GRPO on our environments with TRL's ``GRPOTrainer`` and a multi-turn ``rollout_func``.

Why ``rollout_func`` and not ``environment_factory``: TRL's environment path renders tools
through the chat template's native tool support and parses calls with a per-template
response schema; SmolLM2's template has neither, and the ``local`` agent does not use
them. A rollout function lets the episode run exactly as at inference: tools in the
system prompt, ``<tool_call>`` text parsed by our tolerant parser, tool results as user
``<tool_response>`` messages, the task's budgets and nudges, and the reward from the
task's own :class:`~agentharness.core.reward.Reward` (``episode.reward().total``).

One rollout is one episode. Its completion is every token after the prompt: the tokens
the model sampled (``env_mask`` 1, trained on) interleaved with the tokens of tool
results and feedback (``env_mask`` 0, context only). A group's episodes are decoded
together, each with its KV cache kept across turns and the prompt read once
(:mod:`agentharness.train.decode`; ``bench/generation.py`` measures the speed against a
plain ``generate`` baseline).

Every rollout is also written as an :class:`~agentharness.store.schema.EpisodeRecord` to
``OUT/rollouts`` (agent ``grpo:step<N>``), so ``bootcamp report OUT/rollouts`` shows how
rewards moved during training and the loop can mine them like any run.

The training pass computes a group's shared prompt once (:class:`SharedPromptGRPOTrainer`,
built by :func:`shared_prompt_trainer_class`): every episode of a group starts from the same
prompt of well over a thousand tokens, which TRL would run forward and backward once per
episode.
A batch is one group (``per_device_train_batch_size = num_generations``); the prompt is run
once with gradients and each episode's completion is run on top of its KV cache, which
gives the same log-probabilities and gradients as TRL's per-episode pass.
"""

from __future__ import annotations

import functools
import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.registry import get_task, split_task_id, value_for_task
from agentharness.core.task import Budgets
from agentharness.store.instances import read_instances
from agentharness.train import TrainInputError
from agentharness.train.allocator import keeps_freed_pages, running_allocator
from agentharness.train.chat import ChatTemplateError, encode, plain_chat, render
from agentharness.train.model import (
    RunOptions,
    available_memory_bytes,
    finite_losses,
    free_heap_bytes,
    load_trainable,
    lora_config,
    peak_resident_gb,
    resident_gb,
    resolve_dtype,
    resume_checkpoint,
    save_final,
    write_json,
)
from agentharness.train.prefix_cache import PrefixCache, plain_cache_tensors
from agentharness.train.sampling import sample_token


@dataclass(frozen=True)
class GRPOOptions(RunOptions):
    """The knobs of a GRPO run (defaults suit the 135M bundled model on 2 CPU cores)."""

    difficulty: str = "easy"
    n_instances: int = 16  # training instances per task when none are given
    first_seed: int = 100_000  # their seeds: far from the seeds evaluations use
    num_generations: int = 4  # group size G
    prompts_per_step: int = 1  # groups per optimizer step
    max_turns: int = 4  # assistant turns per episode (the task's own budget if larger)
    max_new_tokens: int = 128  # per assistant turn
    # Per task id, (turns, tokens per turn) in place of the two above, so that each task
    # trains under the budget it is evaluated with (one cap for all trained robot_reach at
    # 5 of its 8 evaluation turns).
    task_budgets: dict[str, tuple[int, int]] = field(default_factory=dict)
    max_completion_length: int = 2048  # sampled + environment tokens per episode
    temperature: float = 1.0
    top_p: float = 1.0
    # Tokens a row drafts from its own conversation for the model to verify in the pass that
    # reads its drawn token (speculative sampling, exact; 0: one token a pass). Episodes that
    # agree decode as one row either way (MERGE_AGREEING_ROWS), so a pass verifies drafts for
    # one or two rows, which costs little more than reading one token: on the AVX2-only VM a
    # harmony group took 29.3 s with 3 against 36.9 s with 0 (bench/RESULTS.md, session 41).
    draft_tokens: int = 3
    # "bfloat16": sample with a bfloat16 copy of the model; "auto": that where this machine
    # has fast bfloat16 matrix products (train.model.resolve_dtype)
    rollout_dtype: str = "float32"
    # Compute a group's shared prompt once in the training pass (False: TRL's per-episode pass).
    shared_prompt: bool = True
    # ... keeping at most this many GB of activations for the backward: a stretch of the
    # completions past it is recomputed in the backward instead of kept (one more forward
    # of it). Keeping what fits saved 17 of 92 s on a thermal-v6 group's pass; recomputing
    # everything kept a group of long episodes from exhausting a 24 GB machine. None: half
    # the memory available when the pass starts (the system's, plus what this process's
    # heap holds freed); 0: recompute every stretch.
    keep_activations_gb: float | None = None
    # The KL term's reference model never changes, so its keys and values of the prompts it
    # has read are kept (within this many GB; 0: none) and a prompt that starts like one of
    # them computes only the rest: a curriculum's instances recur, and a task's instances
    # share their system prompt and tools (bench/RESULTS.md, "The prompt computed once a
    # step": a harmony step 69.5 s against 75.1-76.2 s).
    reference_cache_gb: float = 2.0
    # Skip the training pass of a group whose advantages are all zero (every reward equal):
    # with beta 0 its gradient is exactly zero, so the optimizer step is the same without it.
    skip_flat_groups: bool = True
    # What a group's advantages are computed from: "total", the task's Reward.total
    # (partial credit included), or "success", 1 for a solved episode and 0 otherwise, so
    # that unsolved episodes are all equally bad and a group nobody solves is flat (GRPO
    # on robot_reach-v7's total learnt to stop early near the target; experiments/RESULTS.md).
    reward_signal: str = "total"
    # Dynamic sampling (DAPO's, online): a group whose episodes all succeed or all fail
    # teaches nothing about solving, so play up to this many further groups, each on a fresh
    # instance of the same task and difficulty (seeds from ``resample_first_seed``, one
    # stream per task), and train on the first whose outcomes differ (else the last played).
    # A fixed curriculum goes flat as the policy learns it, and shows no instance where the
    # policy has since acquired a new failure (v37's robot_reach: stepping on after "within
    # tolerance" on held-out instances its curriculum never showed; experiments/RESULTS.md).
    # Where the streams are is saved with every trainer checkpoint (RolloutStreams), so a
    # resumed run draws the instances after those the first part played.
    resample_flat: int = 0
    resample_first_seed: int = 200_000
    learning_rate: float = 5e-6
    beta: float = 0.0  # KL to the reference model (0: no reference model is kept)
    epsilon: float = 0.2  # PPO-style clip
    num_iterations: int = 1  # optimizer passes per generated batch
    loss_type: str = "dapo"
    scale_rewards: str = "group"

    def budget_of(self, task: str) -> tuple[int, int]:
        """(turns, tokens per turn) an episode of ``task`` plays under: its ``task_budgets``
        entry (by versioned id, else by bare name), else ``max_turns``, ``max_new_tokens``."""
        return value_for_task(self.task_budgets, task) or (self.max_turns, self.max_new_tokens)


def _check_task_budgets(budgets: dict[str, tuple[int, int]], played: set[str]) -> None:
    """Reject a per-task budget that is not positive or names another version of a task the
    problems play (that task would silently train on the default budget); a budget for a
    task no problem plays is a note on stderr (a curriculum may have left that task out)."""
    for task, (turns, tokens) in budgets.items():
        if turns < 1 or tokens < 1:
            raise TrainInputError(
                f"the budget of {task} is {turns} turns of {tokens} tokens; both must be >= 1"
            )
        if any(_matches(p, [task]) for p in played):
            continue
        name = split_task_id(task)[0]
        versions = sorted(p for p in played if split_task_id(p)[0] == name)
        if versions:
            raise TrainInputError(
                f"a turn budget is given for {task}, but the problems play {', '.join(versions)}; "
                f"name that version (or the bare name {name})"
            )
        print(
            f"[grpo] note: a turn budget is given for {task}, which no training problem plays "
            f"(tasks played: {', '.join(sorted(played))})",
            file=sys.stderr,
        )


def rl_rows(instances: list[Instance]) -> list[dict[str, Any]]:
    """RL rows ``{"prompt", "instance", "task"}`` (the exporter's TRL layout) for instances.

    The prompt is the conversation as the text-format model sees it (tools in the system
    prompt), so TRL's logging shows what the model was given.
    """
    rows = []
    for inst in instances:
        spec = get_task(inst.task)
        prompt = plain_chat(spec.generator.prompt(inst), spec.world.tool_schemas())
        rows.append({"prompt": prompt, "instance": inst.model_dump_json(), "task": inst.task})
    return rows


def training_instances(tasks: list[str], opts: GRPOOptions) -> list[Instance]:
    """``opts.n_instances`` fresh instances per task at ``opts.difficulty`` (seeds from ``first_seed``)."""
    out: list[Instance] = []
    for task in tasks:
        spec = get_task(task)
        out.extend(
            spec.instance(seed, opts.difficulty)
            for seed in range(opts.first_seed, opts.first_seed + opts.n_instances)
        )
    return out


def prompt_key(prompt: list[dict[str, Any]]) -> str:
    """A key for a prompt that survives a round trip through a datasets table."""
    pairs = [
        [m.get("role"), m["content"] if isinstance(m.get("content"), str) else m.get("content")]
        for m in prompt
    ]
    return json.dumps(pairs, sort_keys=True, default=str)


@dataclass
class Rollout:
    """One episode played by the policy, as token ids plus what the environment said."""

    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]  # 1 where the model sampled the token, 0 for environment tokens
    logprobs: list[float]  # the sampling log-probability of each sampled token (0.0 elsewhere)
    reward: float
    success: bool
    end_reason: str
    turns: int
    record: Any = None  # EpisodeRecord


# A group's episodes that have read and written the same tokens so far decode as one row:
# the others (its followers) take its logits and each draws its own next token from them
# with its own generator; a follower that draws another token first copies the keys and
# values its cache lacks from the row it followed, then decodes on its own. An SFT model's
# samples agree for most of an episode (v39's first GRPO groups: 1.0-1.7 distinct rows of
# 8 at a decoding position), and a pass over fewer rows costs less. With drafts each
# follower verifies the row's draft with its own generator and leaves where its verdict
# differs. False: every row decodes itself.
MERGE_AGREEING_ROWS = True

# Inside the trainer, a group's rollouts start with its training pass's prompt forward
# (PromptPasses) and decode on from its keys and values instead of reading the prompt:
# the step computes the prompt once, not twice. False: the rollouts read it themselves.
PROMPT_PASS_IN_ROLLOUTS = True


@dataclass
class _Row:
    """The state of one episode of a group while the group is played."""

    episode: Any  # Episode
    chat: list[dict[str, str]]
    generator: Any  # torch.Generator: each episode has its own sampling stream
    seq: int = -1  # its sequence in the Decoder
    completion: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turn: list[int] = field(default_factory=list)  # tokens sampled in the current turn
    room: int = 0  # tokens the current turn may still sample
    max_new_tokens: int = 128  # tokens a turn may sample (its task's budget)
    drafter: Any = None  # NgramDrafter over everything the row has read (draft_tokens > 0)


class EpisodeRoller:
    """Plays groups of episodes with a causal LM, turn by turn, the way the ``local`` agent does.

    A group's episodes are decoded together by one :class:`~agentharness.train.decode.Decoder`:
    the prompt is read once and its KV cache copied to every episode, each decoding step
    reads the weights once for all episodes still writing, each episode's cache is kept
    across its turns (a turn reads only the environment's reply; a reply to a conversation
    another episode has already read is copied from it), episodes that have written the
    same tokens so far decode as one row (:data:`MERGE_AGREEING_ROWS`), and an episode that
    ends its turn steps its environment and goes on with its next turn at once instead of
    waiting for the others. ``opts.rollout_dtype`` ``bfloat16`` samples with a bfloat16 copy
    of the model (``bench/generation.py`` measures both). Used by the GRPO rollout function;
    usable on its own (tests drive it directly).
    """

    def __init__(self, model: Any, tokenizer: Any, opts: GRPOOptions, envs: Any = None) -> None:
        from agentharness.rollout.ray_backend import LocalEnvs

        self.model = model
        self.tokenizer = tokenizer
        self.opts = opts
        # Where episodes live: here (LocalEnvs) or on Ray workers (RayEnvs, --env-backend ray).
        self.envs = envs if envs is not None else LocalEnvs()
        self.eos_ids = eos_ids(model, tokenizer)
        self.forward_passes = 0  # of the last play_group (bench/generation.py reports it)
        self.stats: dict[str, list[float]] = {}  # its Decoder's: time in decoding steps and reads
        self.drafts = [0, 0]  # of the last play_group: drafted tokens, and how many were kept
        self.copied_reads = 0  # of the last play_group: replies whose keys and values were copied
        self._sampling_copy: Any = None  # the bfloat16 copy, refreshed for each group
        # Inside a trainer: the training pass's prompt forward, run before the group is played
        # (PromptPasses.compute); its keys and values spare the group reading its prompt.
        self.prompt_pass: Callable[[list[int]], list[tuple[Any, Any]] | None] | None = None

    def budgets(self, instance: Instance) -> Budgets:
        own = get_task(instance.task).interaction.budgets_for(instance)
        turns, _ = self.opts.budget_of(instance.task)
        return own.override(max_turns=min(own.max_turns, turns))

    def play_group(self, instance: Instance, n: int, seed: int) -> list[Rollout]:
        """``n`` independent episodes on ``instance``; episode ``k`` samples from ``seed``, ``k``."""
        import torch

        from agentharness.train.decode import Decoder, sampler
        from agentharness.train.sampling import NgramDrafter

        started = time.time()
        self.drafts = [0, 0]
        self.copied_reads = 0
        rows = []
        for k in range(n):
            episode = self.envs.open(instance, self.budgets(instance))
            rows.append(
                _Row(
                    episode=episode,
                    chat=plain_chat(episode.messages, episode.tools),
                    generator=torch.Generator().manual_seed(seed * 7919 + k * 1009),
                    max_new_tokens=self.opts.budget_of(instance.task)[1],
                )
            )
        tok = self.tokenizer
        prompt_ids = encode(tok, render(tok, rows[0].chat, generation_prompt=True))
        known = self.prompt_pass(prompt_ids) if self.prompt_pass is not None else None
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad(), class_forward(self.model):
                self._sampling_copy = sampler(
                    self.model, self.opts.rollout_dtype, reuse=self._sampling_copy
                )
                decoder = Decoder(self._sampling_copy, n)
                root = decoder.open()
                if known is not None and known[0][0].dtype == decoder.cache.dtype:
                    decoder.load(root, known)  # all but the last prompt token
                    first = decoder.step({root: prompt_ids[-1:]})[root]
                else:
                    first = decoder.step({root: prompt_ids})[root]
                drafter = NgramDrafter() if self.opts.draft_tokens > 0 else None
                if drafter is not None:
                    drafter.extend(prompt_ids)
                for row, seq in zip(rows, decoder.fork(root, n), strict=True):
                    row.seq = seq
                    row.drafter = None if drafter is None else drafter.copy()
                self._play(rows, decoder, first)
                self.forward_passes = decoder.forward_passes
                self.stats = decoder.stats
        finally:
            self.model.train(was_training)
        return [self._rollout(instance, prompt_ids, r, started) for r in rows]

    # -- internals ------------------------------------------------------------------
    def _play(self, rows: list[_Row], decoder: Any, first: Any) -> None:
        """Decode every episode to its end; each steps its environment when its turn ends.

        With ``opts.draft_tokens`` a row that has drawn its next token also feeds the tokens
        its own conversation suggests come next (:class:`NgramDrafter`); the model reads
        them in the same pass and :func:`accept_drafts` keeps each with the probability the
        model gives it, so the tokens are distributed as one-at-a-time sampling draws them.
        """
        from agentharness.train.sampling import accept_drafts

        logits = {row.seq: first for row in rows}
        read_before: dict[tuple[int, ...], tuple[int, Any]] = {}  # see _read
        carried: dict[int, int] = {}  # a token drawn at a refusal, not read yet
        turn_over: list[_Row] = []  # rows whose turn ended while their drafts were verified
        # follower seq -> the seq it follows (MERGE_AGREEING_ROWS); a follower's own cache
        # stops where it began following, the rest of its conversation is in the other's
        merge = MERGE_AGREEING_ROWS
        following = {row.seq: rows[0].seq for row in rows[1:]} if merge else {}
        active = [row for row in rows if self._start_turn(row, decoder)]
        while active:
            feeds: dict[int, list[int]] = {}
            ended, turn_over = turn_over, []
            over = {id(r) for r in ended}
            for row in active:
                if id(row) in over:
                    continue
                if row.seq in carried:
                    token = carried.pop(row.seq)
                else:
                    token, logprob = self._sample(logits[row.seq], row.generator)
                    self._take(row, token, logprob)
                if token in self.eos_ids or len(row.turn) >= row.room:
                    ended.append(row)
                else:
                    feeds[row.seq] = [token]
            if following:
                self._part(following, feeds, decoder)
            replies: dict[int, list[int]] = {}
            if ended:
                texts = [self.tokenizer.decode(r.turn, skip_special_tokens=True) for r in ended]
                # The turns that ended together step together: remote environments in parallel.
                self.envs.step_all([(r.episode, t) for r, t in zip(ended, texts, strict=True)])
                for row, text in zip(ended, texts, strict=True):
                    reply = self._after_turn(row, text)
                    if reply is not None and self._start_turn(row, decoder):
                        replies[row.seq] = reply
                    else:
                        active.remove(row)
            drafts = self._drafts(active, feeds)
            if drafts:
                by_seq = {row.seq: row for row in active}
                read = decoder.extend({s: fed + drafts.get(s, []) for s, fed in feeds.items()})
                for seq, seen in read.items():
                    draft = drafts.get(seq)
                    if not draft:
                        logits[seq] = seen[0]
                        continue
                    start = decoder.length(seq) - len(draft)  # the drawn token's position + 1
                    # The row's followers verify its draft too, each with its own generator.
                    group = [seq, *(f for f, led in following.items() if led == seq)]
                    verdicts = {
                        s: accept_drafts(
                            seen, draft, self.opts.temperature, self.opts.top_p,
                            by_seq[s].generator,
                        )
                        for s in group
                    }  # fmt: skip
                    self._part_verdicts(seq, verdicts, following, decoder)
                    for s, verdict in verdicts.items():
                        row = by_seq[s]
                        self.drafts[0] += len(draft)
                        self.drafts[1] += verdict.read
                        own = s not in following  # a follower's cache stops before these
                        for i, (token, logprob) in enumerate(
                            zip(verdict.tokens, verdict.logprobs, strict=True)
                        ):
                            self._take(row, token, logprob)
                            if token in self.eos_ids or len(row.turn) >= row.room:
                                if own:
                                    decoder.crop(s, start + i)  # a turn's last token is not read
                                turn_over.append(row)
                                break
                        else:
                            if own:
                                decoder.crop(s, start + verdict.read)
                            if verdict.next_logits is not None:
                                logits[s] = verdict.next_logits
                            else:
                                carried[s] = verdict.tokens[-1]
            elif feeds:
                logits.update(decoder.step(feeds))
            if replies:
                logits.update(self._read(decoder, rows, replies, read_before))
                if merge:
                    self._follow_alike([r for r in rows if r.seq in replies], following)
            for seq, followed in following.items():
                logits[seq] = logits[followed]

    def _part(self, following: dict[int, int], feeds: dict[int, list[int]], decoder: Any) -> None:
        """Settle the followers after a draw: one that drew the token the row it follows
        drew is not fed (it follows on); the others leave, first copying the positions
        their cache lacks from that row. A turn's end parts them all (its replies are read
        by :meth:`_read`). Followers that drew the same other token follow the first of them.
        """
        leaving: dict[tuple[int, tuple[int, ...] | None], int] = {}  # (followed, draw) -> new seq
        for seq, followed in list(following.items()):
            draw = tuple(feeds[seq]) if seq in feeds else None
            if draw is not None and draw == tuple(feeds.get(followed, ())):
                del feeds[seq]  # the same conversation still: the other row's pass serves it
                continue
            del following[seq]
            if draw is not None and (followed, draw) in leaving:
                following[seq] = leaving[(followed, draw)]
                del feeds[seq]
                continue
            decoder.copy(followed, seq, decoder.length(followed))
            if draw is not None:
                leaving[(followed, draw)] = seq

    @staticmethod
    def _part_verdicts(
        seq: int, verdicts: dict[int, Any], following: dict[int, int], decoder: Any
    ) -> None:
        """Settle ``seq``'s followers after each verified its draft: one whose verdict is
        ``seq``'s follows on; the others leave, the first of each other verdict copying
        every position ``seq`` has just read (it crops them to its own verdict) and the rest
        with that verdict following it."""

        def kept(s: int) -> tuple[tuple[int, ...], int]:
            return tuple(verdicts[s].tokens), verdicts[s].read

        leaders = {kept(seq): seq}
        for s in verdicts:
            if s == seq or kept(s) == kept(seq):
                continue
            del following[s]
            if kept(s) in leaders:
                following[s] = leaders[kept(s)]
            else:
                leaders[kept(s)] = s
                decoder.copy(seq, s, decoder.length(seq))

    @staticmethod
    def _follow_alike(read: list[_Row], following: dict[int, int]) -> None:
        """Rows just read whose conversations are the same follow the first of them."""
        first: dict[tuple[int, ...], int] = {}
        for row in read:
            key = tuple(row.completion)
            if key in first:
                following[row.seq] = first[key]
            else:
                first[key] = row.seq

    def _read(
        self,
        decoder: Any,
        rows: list[_Row],
        replies: dict[int, list[int]],
        read_before: dict[tuple[int, ...], tuple[int, Any]],
    ) -> dict[int, Any]:
        """Feed each row its reply; the logits after it.

        Episodes of a group often agree for a turn or more (a confident model, the same
        tool replies), so a row whose whole conversation so far is one another row has read
        (``read_before``: completion tokens -> that row's sequence and its logits) copies
        those keys and values instead of computing them: the same values its own read would
        give, for a copy of the new positions.
        """
        completion = {row.seq: tuple(row.completion) for row in rows if row.seq in replies}
        fresh: dict[int, list[int]] = {}
        copies: dict[int, tuple[int, ...]] = {}
        first: dict[tuple[int, ...], int] = {}
        out: dict[int, Any] = {}
        for seq, reply in replies.items():
            key = completion[seq]
            length = decoder.length(seq) + len(reply)
            known = read_before.get(key)
            if (
                known is not None
                and known[0] in decoder.seqs
                and decoder.length(known[0]) >= length
            ):
                decoder.copy(known[0], seq, length)
                out[seq] = known[1]
                self.copied_reads += 1
            elif key in first:
                copies[seq] = key
            else:
                first[key] = seq
                fresh[seq] = reply
        if fresh:
            out.update(decoder.step(fresh))
        for key, seq in first.items():
            read_before[key] = (seq, out[seq])
        for seq, key in copies.items():
            decoder.copy(first[key], seq, decoder.length(seq) + len(replies[seq]))
            out[seq] = out[first[key]]
            self.copied_reads += 1
        return out

    def _drafts(self, active: list[_Row], feeds: dict[int, list[int]]) -> dict[int, list[int]]:
        """Each fed row's draft (none when ``draft_tokens`` is 0 or nothing matches)."""
        k = self.opts.draft_tokens
        if k <= 0:
            return {}
        drafts = {}
        for row in active:
            if row.seq in feeds and row.drafter is not None:
                # room for the draft and one more token: a turn never runs past its room
                draft = row.drafter.propose(min(k, row.room - len(row.turn) - 1))
                if draft:
                    drafts[row.seq] = draft
        return drafts

    def _take(self, row: _Row, token: int, logprob: float) -> None:
        """Add a drawn token to the row's turn."""
        row.turn.append(token)
        row.logprobs.append(logprob)
        if row.drafter is not None:
            row.drafter.extend([token])

    def _start_turn(self, row: _Row, decoder: Any) -> bool:
        """Begin the row's next turn; False (and its slot freed) when the episode is over."""
        row.turn = []
        row.room = min(row.max_new_tokens, self.opts.max_completion_length - len(row.completion))
        if row.room <= 0 and not row.episode.done:
            row.episode.finish("max_tokens")
        if row.episode.done:
            decoder.close(row.seq)
            return False
        return True

    def _after_turn(self, row: _Row, text: str) -> list[int] | None:
        """Record the sampled turn; the tokens the model reads next (None: the episode is over)."""
        new = row.turn
        row.completion += new
        row.env_mask += [1] * len(new)
        if row.episode.done:
            return None
        eos = new[-1] if new[-1] in self.eos_ids else None
        after = plain_chat(row.episode.messages, row.episode.tools)
        env_ids = encode(self.tokenizer, splice(self.tokenizer, row.chat, text, eos, after))
        row.chat = after
        if len(row.completion) + len(env_ids) >= self.opts.max_completion_length:
            row.episode.finish("max_tokens")
            return None
        row.completion += env_ids
        row.env_mask += [0] * len(env_ids)
        row.logprobs += [0.0] * len(env_ids)
        if row.drafter is not None:
            row.drafter.extend(env_ids)
        return [new[-1], *env_ids]  # the last sampled token was never read

    def _sample(self, logits: Any, generator: Any) -> tuple[int, float]:
        """A token from ``logits`` at the run's temperature and top-p, and its log-probability."""
        return sample_token(logits, self.opts.temperature, self.opts.top_p, generator)

    def _rollout(
        self, instance: Instance, prompt_ids: list[int], row: _Row, started: float
    ) -> Rollout:
        from agentharness.store.schema import Timings

        episode = row.episode
        record = self.envs.record(
            episode,
            agent="grpo",
            sample=0,
            timings=Timings(started_at=started, wall_s=time.time() - started),
        )
        reward = record.reward
        return Rollout(
            prompt_ids=list(prompt_ids),
            completion_ids=row.completion,
            env_mask=row.env_mask,
            logprobs=row.logprobs,
            reward=float(reward.total),
            success=bool(reward.success),
            end_reason=episode.end_reason or "unknown",
            turns=episode.turns,
            record=record,
        )


@contextmanager
def class_forward(model: Any) -> Iterator[None]:
    """Inside, ``model`` runs without the autocast wrapper accelerate puts on its forward.

    With ``train_dtype`` bfloat16 the trainer's model is wrapped to run under bfloat16
    autocast; rollouts sample with the float32 model (or its bfloat16 copy) as asked.
    """
    saved = vars(model).get("forward")
    original = vars(model).get("_original_forward")
    if original is None:
        yield
        return
    model.forward = original
    try:
        yield
    finally:
        model.forward = saved


def eos_ids(model: Any, tokenizer: Any) -> list[int]:
    """The tokens that end a turn: the model's generation config's and the tokenizer's EOS."""
    eos = model.generation_config.eos_token_id
    ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return sorted(ids)


def splice(
    tokenizer: Any,
    chat: list[dict[str, str]],
    text: str,
    eos: int | None,
    after: list[dict[str, str]],
) -> str:
    """The text between a sampled assistant turn and the next generation point.

    ``chat`` is the conversation the model answered with ``text`` (its sampled tokens,
    ending in the end-of-turn token ``eos`` unless cut off); ``after`` is the conversation
    with that turn and the environment's reply. Returns what the template adds after the
    sampled tokens: the rest of the turn's closing markup (``\n`` after ``<|im_end|>``),
    the new messages, and the next ``<|im_start|>assistant\n``. Raises
    :class:`ChatTemplateError` for a template that does not render turns verbatim and
    prefix-preserving.
    """
    before_turn = render(tokenizer, chat, generation_prompt=True)
    closed = render(
        tokenizer, [*chat, {"role": "assistant", "content": text}], generation_prompt=False
    )
    if not closed.startswith(before_turn + text):
        raise ChatTemplateError(
            "the chat template does not render an assistant turn verbatim after the generation "
            "prompt, so sampled tokens cannot be spliced into the conversation"
        )
    closing = closed[len(before_turn) + len(text) :]
    if eos is not None:
        written = tokenizer.decode([eos], skip_special_tokens=False)
        if closing.startswith(written):
            closing = closing[len(written) :]
    full = render(tokenizer, after, generation_prompt=True)
    if not full.startswith(closed):
        raise ChatTemplateError(
            "the chat template is not prefix-preserving: adding messages re-renders earlier turns"
        )
    return closing + full[len(closed) :]


@dataclass
class RolloutStreams:
    """How far the rollout function is in its instance streams: per prompt, the instances
    with that prompt it has played (it cycles through them), and per task, the fresh
    instances ``resample_flat`` has drawn. Saved beside each trainer checkpoint and read
    back on resume, so a resumed run goes on with the instances after those the checkpoint
    had played instead of replaying them."""

    FILE = "rollout_streams.json"

    cursor: dict[str, int] = field(default_factory=dict)  # by prompt digest
    fresh: dict[str, int] = field(default_factory=dict)  # by task id

    @staticmethod
    def digest(key: str) -> str:
        """A short name for a prompt key (the key is the whole prompt)."""
        import hashlib

        return hashlib.sha256(key.encode()).hexdigest()[:20]

    def save(self, checkpoint: Path) -> None:
        write_json(checkpoint / self.FILE, {"cursor": self.cursor, "fresh": self.fresh})

    @classmethod
    def load(cls, checkpoint: Path) -> RolloutStreams:
        """The streams saved in ``checkpoint``; fresh ones for a checkpoint written before
        they were saved (such a run may replay instances, as it did then)."""
        path = checkpoint / cls.FILE
        if not path.exists():
            print(f"[grpo] {path} is missing: the instance streams start again", file=sys.stderr)
            return cls()
        try:
            data = json.loads(path.read_text())
            streams = cls(
                cursor={str(k): int(v) for k, v in data["cursor"].items()},
                fresh={str(k): int(v) for k, v in data["fresh"].items()},
            )
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise TrainInputError(
                f"{path} is not a rollout streams file ({err}); delete it to resume with the "
                "streams started again (instances may then be replayed)"
            ) from err
        drawn = ", ".join(f"{task} {n}" for task, n in sorted(streams.fresh.items()))
        print(
            f"[grpo] resuming the instance streams of {checkpoint.name}: "
            f"{sum(streams.cursor.values())} groups played"
            + (f", fresh instances drawn: {drawn}" if drawn else ""),
            file=sys.stderr,
        )
        return streams


def streams_callback(streams: RolloutStreams) -> Any:
    """A transformers ``TrainerCallback`` that saves ``streams`` into each checkpoint."""
    from transformers import TrainerCallback

    class SaveStreams(TrainerCallback):
        def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.is_world_process_zero:
                streams.save(Path(args.output_dir) / f"checkpoint-{state.global_step}")

    return SaveStreams()


def make_rollout_func(
    roller: EpisodeRoller,
    instances_by_prompt: dict[str, list[Instance]],
    log_dir: Path | None = None,
    streams: RolloutStreams | None = None,
) -> Any:
    """A TRL ``rollout_func(prompts, trainer)`` playing one episode per prompt.

    TRL passes ``num_generations`` consecutive copies of each prompt; each run of equal
    prompts is played as one group on one instance. Returns the required
    ``prompt_ids``/``completion_ids``/``logprobs`` plus ``env_mask`` (which tokens the
    model wrote) and ``env_reward``/``env_success``/``end_reason`` for the reward function
    and logs.
    """
    from agentharness.store.run import RunDir

    run_dir = RunDir(log_dir) if log_dir is not None else None
    streams = streams if streams is not None else RolloutStreams()
    calls = {"n": 0}

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        step = int(getattr(getattr(trainer, "state", None), "global_step", calls["n"]))
        calls["n"] += 1
        passes: PromptPasses | None = getattr(trainer, "prompt_passes", None)  # TRL's: none
        if passes is not None:
            passes.clear()  # a batch generated before this one has had its passes
        roller.prompt_pass = (
            passes.compute if passes is not None and PROMPT_PASS_IN_ROLLOUTS else None
        )
        t0 = time.perf_counter()
        out: dict[str, list[Any]] = {
            k: []
            for k in (
                "prompt_ids",
                "completion_ids",
                "env_mask",
                "env_reward",
                "env_success",
                "end_reason",
            )
        }
        i = 0
        drafts = [0, 0]
        copied = 0
        flat: list[str] = []  # groups set aside by resample_flat
        while i < len(prompts):
            key = prompt_key(prompts[i])
            j = i
            while j < len(prompts) and prompt_key(prompts[j]) == key:
                j += 1
            candidates = instances_by_prompt.get(key)
            if not candidates:
                raise KeyError("a GRPO prompt does not match any training instance")
            digest = RolloutStreams.digest(key)
            pick = streams.cursor.get(digest, 0)
            streams.cursor[digest] = pick + 1
            instance = candidates[pick % len(candidates)]
            seed = roller.opts.seed * 1_000_003 + step * 1009 + i
            played: list[Rollout] = []
            for attempt in range(roller.opts.resample_flat + 1):
                if played:  # flat (all solved or none): set aside for a fresh instance
                    if passes is not None:
                        passes.drop(played[0].prompt_ids)
                    outcome = "solved" if played[0].success else "unsolved"
                    _record(run_dir, played, instance, f"grpo:flat:step{step}", i)
                    flat.append(f"{instance.task} seed {instance.seed} all {outcome}")
                    instance = fresh_instance(instance)
                played = roller.play_group(instance, j - i, seed + attempt * 7919)
                drafts = [a + b for a, b in zip(drafts, roller.drafts, strict=True)]
                copied += roller.copied_reads
                if len({r.success for r in played}) > 1:
                    break
            _record(run_dir, played, instance, f"grpo:step{step}", i)
            for r in played:
                out["prompt_ids"].append(r.prompt_ids)
                out["completion_ids"].append(r.completion_ids)
                out["env_mask"].append(r.env_mask)
                out["env_reward"].append(r.reward)
                out["env_success"].append(r.success)
                out["end_reason"].append(r.end_reason)
            i = j
        rewards = out["env_reward"]
        print(
            f"[grpo] step {step}: {len(rewards)} episodes, mean reward "
            f"{sum(rewards) / max(1, len(rewards)):.3f}, solved {sum(out['env_success'])}, "
            f"end reasons {sorted(set(out['end_reason']))}, "
            f"rollouts {time.perf_counter() - t0:.1f} s"
            + (f", resident {resident:.1f} GB" if (resident := resident_gb()) is not None else "")
            + (f", drafted tokens kept {drafts[1]}/{drafts[0]}" if drafts[0] else "")
            + (f", replies copied from an episode that read the same {copied}" if copied else "")
            + (f", flat groups replaced: {'; '.join(flat)}" if flat else ""),
            file=sys.stderr,
        )
        return {**out, "logprobs": None}

    def fresh_instance(instance: Instance) -> Instance:
        """The next instance of ``instance``'s task stream for ``resample_flat``."""
        n = streams.fresh.get(instance.task, 0)
        streams.fresh[instance.task] = n + 1
        seed = roller.opts.resample_first_seed + n
        return get_task(instance.task).instance(seed, instance.difficulty)

    return rollout_func


def _record(
    run_dir: Any, played: list[Rollout], instance: Instance, agent: str, first_sample: int
) -> None:
    """Append a group's episodes to the rollouts log under ``agent`` (``grpo:step<N>`` for a
    trained group, ``grpo:flat:step<N>`` for one ``resample_flat`` set aside)."""
    if run_dir is None:
        return
    for k, r in enumerate(played):
        rec = r.record.model_copy(update={"agent": agent, "sample": first_sample + k})
        rec = rec.model_copy(update={"episode_id": rec.make_id(instance, first_sample + k, agent)})
        run_dir.append(rec)


def episode_reward(
    completions: list[Any], env_reward: list[float], **kwargs: Any
) -> list[float | None]:
    """The reward TRL optimizes: the task's own ``Reward.total`` for each played episode."""
    return [float(r) for r in env_reward]


def episode_success(
    completions: list[Any], env_success: list[bool], **kwargs: Any
) -> list[float | None]:
    """The reward TRL optimizes under ``reward_signal="success"``: 1.0 for a solved episode."""
    return [1.0 if s else 0.0 for s in env_success]


# TRL's reward function for each of train.REWARD_SIGNALS.
REWARD_FUNCS = {"total": episode_reward, "success": episode_success}


def shared_prompt_logps(
    model: Any,
    input_ids: Any,
    attention_mask: Any,
    logits_to_keep: int,
    compute_entropy: bool = False,
    stats: dict[str, int] | None = None,
    keep_activations: float = 0.0,
    score_mask: Any = None,
    temperature: float = 1.0,
    fp32_head: bool = False,
    share_prefixes: bool = True,
    prompt_cache: PrefixCache | None = None,
    prompt_pass: Callable[[Any], list[tuple[Any, Any]] | None] | None = None,
) -> tuple[Any, Any] | None:
    """Per-token log-probabilities (and entropies) of the completions, each prompt computed once.

    ``input_ids`` is ``cat(prompt_ids, completion_ids)`` (prompts left-padded, completions
    right-padded, ``attention_mask`` likewise) and the last ``logits_to_keep`` columns are the
    completions, as TRL's ``GRPOTrainer._get_per_token_logps_and_entropies`` gets them.
    ``model`` carries TRL's fused LM head (``model(..., labels=..., fused_lm_head=True)``
    returns per-token ``log_probs`` and ``entropy`` without materialising the logits).

    Rows with the same prompt tokens (and mask) are one partition. For each, the prompt
    minus its last token is run once (batch 1, with gradients when enabled,
    ``use_cache=True``); the completions (their real tokens only: right padding is never
    computed) then run on top of that KV cache, so their positions and attention are those
    of the full sequence, and gradients reach the prompt through every use of its keys and
    values: log-probabilities and gradients are those of a pass over each whole row. The
    completions run as a prefix tree (:func:`_completion_tree`): a stretch several rows share
    (the same tokens and score-mask entries: a multi-turn group whose episodes agree for a
    few turns, then part) is run once, on top of its parent's cache, and its
    log-probabilities serve every row through it, so gradients from each row's advantage
    reach it; a row's log-probabilities are its path's. Stretches under
    :data:`MIN_SHARED_TOKENS` are run with each branch instead (``share_prefixes`` False,
    or a model whose logits are more than ``lm_head(hidden)`` and keep TRL's head: every
    row is its own branch, only the prompt is shared). Branches run one at a time
    rather than as a batch over an expanded cache: on a CPU a few hundred tokens already
    fill the matrix products, and a batch would compute every episode padded to the
    longest. With gradients enabled, a pass whose activations would take the estimated
    total (:class:`ActivationBudget`) past ``keep_activations`` bytes is
    activation-checkpointed: its activations are recomputed in the backward instead of
    kept (one more forward of it), so a group of long episodes holds what fits and not
    every row's (keeping all exhausted a 24 GB machine); 0 checkpoints every pass but the
    prompt's.
    Returns ``(logps, entropies)`` shaped ``(rows, logits_to_keep)``, zero at padding like
    TRL's, ``entropies`` None unless asked; None when this cannot apply (no two rows share a
    prompt, completion masks that are not right padding, a one-token prompt, a cache that is
    not a plain dynamic one) — the caller then uses the per-row path. ``stats`` (if given)
    counts prompt passes, rows with a scored token, the completion tokens computed for one
    row (``row_tokens``) and once for several (``shared_completion_tokens``), how many of
    them the head scored, how many were recomputed in the backward
    (``recomputed_tokens``) and, with gradients, the activation bytes kept for it as
    :class:`ActivationBudget` estimates them (``kept_activation_bytes``).

    ``prompt_cache`` (without gradients, for a model whose weights do not change: the
    reference model) gives the prompts' keys and values, computing only what it does not
    hold (:class:`~agentharness.train.prefix_cache.PrefixCache`); a left-padded prompt is
    computed as before. ``prompt_pass`` (with gradients) gives, for a prompt's tokens but the
    last, the keys and values a forward pass with gradients already computed, attached to its
    graph (:class:`PromptPasses`: the rollouts ran it before playing the group), or None.

    The LM head is this function's own (:func:`_scored_positions`) wherever the model's
    logits are plain ``lm_head(hidden) / temperature`` (``temperature`` and ``fp32_head``
    must be those the trainer gave TRL's head), because TRL's fused head scores every
    position on a device without Triton. ``score_mask`` (``(rows, logits_to_keep)``, 1
    where the loss reads a log-probability: the model's own tokens) restricts the head to
    those positions; the others score 0, and a row with none is not run. In a multi-turn
    episode a third to a half of the completion is tool results, whose head work this
    saves (1.14x on a real robot_reach group, bench/RESULTS.md).
    """
    import torch
    import torch.utils.checkpoint
    from transformers.cache_utils import DynamicCache

    n, total = input_ids.shape
    c = int(logits_to_keep)
    p = total - c
    if n < 2 or c < 1 or p < 2:
        return None
    prompts, prompt_masks = input_ids[:, :p], attention_mask[:, :p]
    completion_mask = attention_mask[:, p:]
    lengths = [int(x) for x in completion_mask.sum(1)]
    right_padded = (
        torch.arange(c, device=input_ids.device)[None, :]
        < torch.tensor(lengths, device=input_ids.device)[:, None]
    )
    if not torch.equal(completion_mask.bool(), right_padded):
        return None
    partitions: list[list[int]] = []
    for r in range(n):
        for part in partitions:
            lead = part[0]
            if torch.equal(prompts[r], prompts[lead]) and torch.equal(
                prompt_masks[r], prompt_masks[lead]
            ):
                part.append(r)
                break
        else:
            partitions.append([r])
    if len(partitions) == n:
        return None  # nothing shared: the per-row path costs the same

    parts = _head_parts(model)
    budget = ActivationBudget(model, keep_activations if torch.is_grad_enabled() else math.inf)
    if score_mask is not None:
        score_mask = score_mask.bool()
        if tuple(score_mask.shape) != (n, c):
            raise ValueError(f"score_mask is shaped {tuple(score_mask.shape)}, expected {(n, c)}")
    logps: list[Any] = [None] * n
    entropies: list[Any] = [None] * n
    for part in partitions:
        lead = part[0]
        if stats is not None:
            stats["prompt_passes"] = stats.get("prompt_passes", 0) + 1
        if parts is not None:
            # Every common prefix of the completions (a tree of them) is computed once.
            backbone, head = parts
            budget.charge(p - 1, 0, p - 1)  # the prompt's are always kept
            unpadded = bool(prompt_masks[lead, :-1].all())
            kv: list[tuple[Any, Any]] | None = None
            if prompt_pass is not None and torch.is_grad_enabled() and unpadded:
                kv = prompt_pass(prompts[lead, :-1])
            if kv is not None:
                if stats is not None:
                    stats["prompts_from_rollouts"] = stats.get("prompts_from_rollouts", 0) + 1
            elif prompt_cache is not None and not torch.is_grad_enabled() and unpadded:
                kv = prompt_cache.keys_values(backbone, prompts[lead, :-1])
            else:
                cache = backbone(
                    input_ids=prompts[lead : lead + 1, :-1],
                    attention_mask=prompt_masks[lead : lead + 1, :-1],
                    use_cache=True,
                ).past_key_values
                kv = plain_cache_tensors(cache, p - 1)
            if kv is None:
                return None  # e.g. sliding-window layers
            tree = _completion_tree(input_ids[:, p:], score_mask, part, lengths, share_prefixes)
            run_node = functools.partial(
                _run_tree_node,
                backbone=backbone,
                head=head,
                input_ids=input_ids,
                attention_mask=attention_mask,
                prompt_length=p,
                score_mask=score_mask,
                budget=budget,
                temperature=temperature,
                fp32_head=fp32_head,
                stats=stats,
            )
            for r, (row_logps, row_entropy) in _tree_logps(tree, kv, run_node, lengths).items():
                logps[r], entropies[r] = row_logps, row_entropy
            if stats is not None:
                stats["rows"] = stats.get("rows", 0) + sum(
                    1
                    for r in part
                    if lengths[r]
                    and (score_mask is None or bool(score_mask[r, : lengths[r]].any()))
                )
            continue
        budget.charge(p - 1, 1, p - 1)
        cache = model(
            input_ids=prompts[lead : lead + 1, :-1],
            attention_mask=prompt_masks[lead : lead + 1, :-1],
            use_cache=True,
            logits_to_keep=1,
        ).past_key_values
        kv = plain_cache_tensors(cache, p - 1)
        if kv is None:
            return None  # e.g. sliding-window layers, or gradient checkpointing dropped the cache
        for r in part:
            length = lengths[r]
            scored = None if score_mask is None else score_mask[r, :length]
            if length == 0 or (scored is not None and not bool(scored.any())):
                continue
            ids = input_ids[r : r + 1, p - 1 : p + length]
            labels = ids.clone()
            labels[:, 0] = -100

            def row_pass(
                ids: Any, mask: Any, labels: Any, kv: Any = kv, scored: Any = scored
            ) -> tuple[Any, Any]:
                # A fresh cache object over the shared tensors: each row appends its own.
                out = model(
                    input_ids=ids,
                    attention_mask=mask,
                    past_key_values=DynamicCache(ddp_cache_data=kv),
                    labels=labels,
                    fused_lm_head=True,
                )
                if scored is None:
                    return out.log_probs[0], out.entropy[0]
                return out.log_probs[0] * scored, out.entropy[0] * scored

            mask = attention_mask[r : r + 1, : p + length]
            # TRL's fused head scores every position
            if not budget.keep(length, length + 1, p + length):
                # Non-reentrant: gradients still reach the prompt's keys and values, which
                # the row reads through the closure, and autocast is replayed as it was.
                row_logps, row_entropy = torch.utils.checkpoint.checkpoint(
                    row_pass, ids, mask, labels, use_reentrant=False
                )
                if stats is not None:
                    stats["recomputed_tokens"] = stats.get("recomputed_tokens", 0) + length
            else:
                row_logps, row_entropy = row_pass(ids, mask, labels)
            logps[r] = row_logps
            if compute_entropy:
                entropies[r] = row_entropy
            if stats is not None:
                stats["rows"] = stats.get("rows", 0) + 1
                stats["row_tokens"] = stats.get("row_tokens", 0) + length
                stats["scored_tokens"] = stats.get("scored_tokens", 0) + length
    done = [x for x in logps if x is not None]
    if not done:
        return None  # every completion empty: let TRL build its differentiable zeros
    if stats is not None and torch.is_grad_enabled():
        stats["kept_activation_bytes"] = stats.get("kept_activation_bytes", 0) + budget.kept

    def padded(rows: list[Any]) -> Any:
        like = next(x for x in rows if x is not None)
        return torch.stack(
            [
                like.new_zeros(c)
                if x is None
                else torch.cat([x, x.new_zeros(c - x.size(0))])
                if x.size(0) < c
                else x
                for x in rows
            ]
        )

    return padded(logps), padded(entropies) if compute_entropy else None


class ActivationBudget:
    """Which passes of a training pass keep their activations for the backward.

    :meth:`keep` says whether a pass fits in what is left of ``limit`` bytes and, if so,
    books it. What autograd keeps is estimated from the model's shape, per layer and new
    position (the projections' and the MLP's inputs and outputs), per position attended
    to (the keys and values a pass concatenates to its parent's and the attention saves),
    and per position scored by the head (the float32 log-softmax and its exponential); the
    estimate is an upper bound of what autograd keeps in float32 (measured for SmolLM2:
    1.34 MB a new position against 1.61 estimated; a test checks a small Llama), so a
    pass is never kept on an underestimate. Without gradients nothing is kept anyway:
    give ``math.inf``.
    """

    BYTES = 4  # float32; an autocast pass keeps some of it in bfloat16, which the bound covers

    def __init__(self, model: Any, limit: float) -> None:
        inner = model.get_base_model() if hasattr(model, "get_base_model") else model
        config = getattr(inner, "config", None)
        if config is not None and hasattr(config, "get_text_config"):
            config = config.get_text_config()
        hidden = int(getattr(config, "hidden_size", 0) or 0)
        layers = int(getattr(config, "num_hidden_layers", 0) or 0)
        heads = int(getattr(config, "num_attention_heads", 0) or 0)
        kv_heads = int(getattr(config, "num_key_value_heads", 0) or heads)
        head_dim = int(getattr(config, "head_dim", 0) or (hidden // heads if heads else 0))
        intermediate = int(getattr(config, "intermediate_size", 0) or 4 * hidden)
        self.per_token = self.BYTES * layers * (10 * hidden + 5 * intermediate)
        self.per_context = self.BYTES * layers * 3 * (heads + kv_heads) * head_dim
        self.per_scored = self.BYTES * 3 * int(getattr(config, "vocab_size", 0) or 0)
        if not (self.per_token and self.per_context and self.per_scored):
            limit = 0.0  # a shape this cannot read: keep nothing (the safe side)
        self.limit = limit
        self.kept = 0

    def estimate(self, tokens: int, scored: int, context: int) -> int:
        """Bytes a pass of ``tokens`` new positions (``scored`` of them through the head),
        attending over ``context`` positions in all, keeps for the backward."""
        return tokens * self.per_token + context * self.per_context + scored * self.per_scored

    def keep(self, tokens: int, scored: int, context: int) -> bool:
        """Whether such a pass keeps its activations (then counted as kept)."""
        need = self.estimate(tokens, scored, context)
        if self.kept + need > self.limit:
            return False
        self.kept += need
        return True

    def charge(self, tokens: int, scored: int, context: int) -> None:
        """Count a pass that keeps its activations whatever the limit (a shared prompt)."""
        self.kept += self.estimate(tokens, scored, context)


# A stretch that several completions share is computed in a pass of its own only from this
# many tokens: a pass has a fixed cost (the CPU flash-attention backward's key and value
# gradients over the whole context, ~4 ms a layer here, whatever the pass's length).
MIN_SHARED_TOKENS = 32


@dataclass
class _Node:
    """Completion positions ``start..end-1`` that the ``rows`` share (tokens and score-mask
    entries), in a tree of a group's completions: a child continues where they differ."""

    rows: list[int]
    start: int
    end: int
    ending: list[int]  # rows whose completion ends at ``end``
    children: list[_Node]
    scored_below: bool  # the loss reads a position here or in a descendant


def _completion_tree(
    completions: Any, score_mask: Any, rows: list[int], lengths: list[int], share: bool = True
) -> _Node:
    """The prefix tree of ``rows``' completions (``share`` False: every row its own branch).

    The root holds what every row shares (possibly nothing); rows split where their
    tokens or score-mask entries differ, and a row that ends is a node's ``ending``.
    """

    def build(members: list[int], start: int) -> _Node:
        limit = min(lengths[r] for r in members)
        end = start
        if limit > start and (share or len(members) == 1):
            block = completions[members, start:limit]
            same = (block == block[:1]).all(0)
            if score_mask is not None:
                scored = score_mask[members, start:limit]
                same &= (scored == scored[:1]).all(0)
            differs = (~same).nonzero()
            end = start + (int(differs[0, 0]) if len(differs) else limit - start)
        groups: dict[tuple[int, bool], list[int]] = {}
        for r in members:
            if lengths[r] > end:
                key = (
                    int(completions[r, end]),
                    True if score_mask is None else bool(score_mask[r, end]),
                )
                groups.setdefault((r, False) if not share else key, []).append(r)
        if groups and 0 < end - start < MIN_SHARED_TOKENS:
            # Too short to be worth a pass of its own: each branch computes it instead.
            ending = [r for r in members if lengths[r] == end]
            branches = [*groups.values(), *([ending] if ending else [])]
            children = [build(group, start) for group in branches]
            return _Node(members, start, start, [], children, any(c.scored_below for c in children))
        children = [build(group, end) for group in groups.values()]
        scored_here = end > start and (
            score_mask is None or bool(score_mask[members[0], start:end].any())
        )
        return _Node(
            rows=members,
            start=start,
            end=end,
            ending=[r for r in members if lengths[r] == end],
            children=children,
            scored_below=scored_here or any(c.scored_below for c in children),
        )

    return build(list(rows), 0)


def _tree_logps(
    root: _Node, kv: Any, run_node: Any, lengths: list[int]
) -> dict[int, tuple[Any, Any]]:
    """Each row's ``(log-probabilities, entropies)``: the concatenation of its path's nodes,
    each node run once (``run_node(node, kv, keep_cache)`` returns its log-probabilities,
    entropies and, when asked, the cache its children continue from). A subtree whose
    positions the loss never reads is not run: its rows score 0 there (and a row with
    nothing computed on its path is left out, like a row that is not run at all)."""
    import torch

    out: dict[int, tuple[Any, Any]] = {}

    def finish(rows: list[int], path: list[tuple[Any, Any]], upto: int) -> None:
        if not path:
            return
        for r in rows:
            pieces = list(path)
            if lengths[r] > upto:
                zero = path[0][0].new_zeros(lengths[r] - upto)
                pieces.append((zero, zero))
            out[r] = (torch.cat([lp for lp, _ in pieces]), torch.cat([e for _, e in pieces]))

    def visit(node: _Node, kv: Any, path: list[tuple[Any, Any]]) -> None:
        if not node.scored_below:
            finish(node.rows, path, node.start)
            return
        if node.end > node.start:
            lp, ent, kv = run_node(node, kv, keep_cache=bool(node.children))
            path = [*path, (lp, ent)]
        finish(node.ending, path, node.end)
        for child in node.children:
            visit(child, kv, path)

    visit(root, kv, [])
    return out


def _run_tree_node(
    node: _Node,
    kv: Any,
    keep_cache: bool,
    *,
    backbone: Any,
    head: Any,
    input_ids: Any,
    attention_mask: Any,
    prompt_length: int,
    score_mask: Any,
    budget: ActivationBudget,
    temperature: float,
    fp32_head: bool,
    stats: dict[str, int] | None,
) -> tuple[Any, Any, Any]:
    """One node's pass on top of its parent's keys and values ``kv``: the log-probabilities
    and entropies of its tokens and (``keep_cache``) the keys and values with its own.

    It reads the token before its first (the hidden state there predicts that first token)
    up to the one before its last. Activation-checkpointed (recomputed in the backward
    instead of kept) when its activations do not fit in what is left of ``budget``.
    """
    import torch
    import torch.utils.checkpoint
    from transformers.cache_utils import DynamicCache

    p, lead, a, b = prompt_length, node.rows[0], node.start, node.end
    ids = input_ids[lead : lead + 1, p - 1 + a : p - 1 + b]
    mask = attention_mask[lead : lead + 1, : p - 1 + b]
    targets = input_ids[lead, p + a : p + b]
    scored = None if score_mask is None else score_mask[lead, a:b]

    def node_pass(ids: Any, mask: Any) -> tuple[Any, ...]:
        # A fresh cache object over the parent's tensors: each branch appends its own.
        cache = DynamicCache(ddp_cache_data=kv)
        hidden = backbone(
            input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=keep_cache
        ).last_hidden_state[0]
        if scored is not None and not bool(scored.any()):
            lp = ent = hidden.new_zeros(b - a, dtype=torch.float32)
        else:
            lp, ent = _scored_positions(
                hidden, targets, head, scored, temperature=temperature, fp32=fp32_head
            )
        if not keep_cache:
            return lp, ent
        grown = plain_cache_tensors(cache, p - 1 + b)
        if grown is None:  # a pass appends to each layer of a plain cache: never expected
            raise RuntimeError("a tree node's pass did not extend its plain key-value cache")
        return (lp, ent, *[t for pair in grown for t in pair])

    scored_count = b - a if scored is None else int(scored.sum())
    if not budget.keep(b - a, scored_count, p - 1 + b):
        # Non-reentrant: gradients still reach the parent's keys and values, which the pass
        # reads through the closure, and autocast is replayed as it was.
        outs = torch.utils.checkpoint.checkpoint(node_pass, ids, mask, use_reentrant=False)
        if stats is not None:
            stats["recomputed_tokens"] = stats.get("recomputed_tokens", 0) + b - a
    else:
        outs = node_pass(ids, mask)
    if stats is not None:
        key = "shared_completion_tokens" if len(node.rows) > 1 else "row_tokens"
        stats[key] = stats.get(key, 0) + b - a
        stats["scored_tokens"] = stats.get("scored_tokens", 0) + (
            b - a if scored is None else int(scored.sum())
        )
    kv_out = list(zip(outs[2::2], outs[3::2], strict=True)) if keep_cache else None
    return outs[0], outs[1], kv_out


# Config fields under which a model's logits are not plain ``lm_head(hidden)``: such models
# keep TRL's fused head, which applies them.
_LOGIT_TRANSFORMS = (
    "final_logit_softcapping",
    "logit_scale",
    "output_multiplier",
    "lm_head_multiplier",
    "logits_scaling",
)


def _head_parts(model: Any) -> tuple[Any, Any] | None:
    """``(backbone, lm_head)`` of a causal LM (under a PEFT wrapper too), or None when its
    logits are more than ``lm_head(hidden)`` or its parts cannot be found."""
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = getattr(inner, "config", None)
    if config is None or not hasattr(inner, "get_output_embeddings"):
        return None
    text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    if any(getattr(text_config, name, None) is not None for name in _LOGIT_TRANSFORMS):
        return None
    backbone = getattr(inner, "base_model", None)
    head = inner.get_output_embeddings()
    if backbone is None or backbone is inner or head is None:
        return None
    return backbone, head


_HEAD_CHUNK = 1024  # positions per head product: ~200 MB of float32 logits for a 49k vocabulary


def _scored_positions(
    hidden: Any, targets: Any, head: Any, scored: Any, *, temperature: float, fp32: bool
) -> tuple[Any, Any]:
    """Log-probabilities of ``targets`` and entropies under ``head(hidden) / temperature``.

    Only positions where ``scored`` is true (all when None) go through the head; the rest
    are 0. The log-softmax is in float32 (the head's product in the autocast dtype, or in
    float32 with ``fp32``, as TRL's ``cast_lm_head_to_fp32``). Positions go through in
    chunks, which bounds the logits a pass without gradients (old log-probabilities) holds
    at once; with gradients each chunk's float32 log-softmax is kept for the backward.
    """
    import torch

    picked = hidden if scored is None else hidden[scored]
    wanted = targets if scored is None else targets[scored]
    logps, entropies = [], []
    for start in range(0, picked.size(0), _HEAD_CHUNK):
        h = picked[start : start + _HEAD_CHUNK]
        if fp32:
            with torch.autocast(h.device.type, enabled=False):
                logits = torch.nn.functional.linear(
                    h.float(), head.weight.float(), None if head.bias is None else head.bias.float()
                )
        else:
            logits = head(h).float()
        log_p = torch.log_softmax(logits / temperature, dim=-1)
        logps.append(log_p.gather(-1, wanted[start : start + _HEAD_CHUNK, None])[:, 0])
        entropies.append(-(log_p.exp() * log_p).sum(-1))
    row_logps, row_entropy = torch.cat(logps), torch.cat(entropies)
    if scored is None:
        return row_logps, row_entropy
    full = hidden.new_zeros(targets.shape, dtype=torch.float32)
    return full.masked_scatter(scored, row_logps), full.masked_scatter(scored, row_entropy)


_MULTIMODAL_ARGS = (
    "pixel_values",
    "image_grid_thw",
    "num_images",
    "pixel_attention_mask",
    "spatial_shapes",
    "num_tiles",
    "image_sizes",
    "token_type_ids",
    "mm_token_type_ids",
    "image_position_ids",
)


class PromptPasses:
    """The training pass's prompt forwards, run when the rollouts start instead of after them.

    A GRPO group's rollouts read its prompt (well over a thousand tokens) with the policy,
    and its training pass reads it again, with gradients, with the same weights (the step's
    update comes after both). :meth:`compute` runs the training pass's forward of a prompt
    (all but its last token, as :func:`shared_prompt_logps` does) when the group starts, keeps
    it with its graph, and gives the rollouts its keys and values (detached) to decode on
    from, so the rollouts read only the last prompt token; :meth:`take` hands it to the
    training pass, once, while the weights are those it was computed with (the same
    optimizer step). A group set aside (``resample_flat``) is :meth:`drop`-ped; every pass
    not taken is freed when the next batch's rollouts :meth:`clear` them.
    """

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self._passes: dict[tuple[int, ...], tuple[int, list[tuple[Any, Any]]]] = {}
        self.computed = 0  # prompt forwards run for the rollouts
        self.taken = 0  # of those, used by a training pass

    def compute(self, prompt_ids: list[int]) -> list[tuple[Any, Any]] | None:
        """Each layer's detached ``(keys, values)`` of ``prompt_ids[:-1]`` (None where the
        model's pass cannot give them: the rollouts then read the prompt themselves)."""
        import torch

        trainer = self.trainer
        parts = _head_parts(trainer.model)
        if (
            parts is None
            or len(prompt_ids) < 2
            or not trainer.model.training
            or not trainer._can_share(trainer.model, {})
        ):
            return None
        device = next(trainer.model.parameters()).device
        ids = torch.tensor([prompt_ids[:-1]], device=device)
        with torch.enable_grad(), trainer.accelerator.autocast():
            cache = parts[0](
                input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True
            ).past_key_values
        kv = plain_cache_tensors(cache, len(prompt_ids) - 1)
        if kv is None:
            return None
        self._passes[tuple(prompt_ids[:-1])] = (trainer.state.global_step, kv)
        self.computed += 1
        return [(k.detach(), v.detach()) for k, v in kv]

    def take(self, ids: Any) -> list[tuple[Any, Any]] | None:
        """The kept pass of the prompt ``ids`` (all but its last token), attached to its
        graph, if computed at this optimizer step; each pass is given once."""
        entry = self._passes.pop(tuple(int(x) for x in ids.tolist()), None)
        if entry is None or entry[0] != self.trainer.state.global_step:
            return None
        self.taken += 1
        return entry[1]

    def drop(self, prompt_ids: list[int]) -> None:
        self._passes.pop(tuple(prompt_ids[:-1]), None)

    def clear(self) -> None:
        self._passes.clear()


@contextmanager
def reference_copied_from(policy: Any) -> Iterator[None]:
    """Have TRL's ``GRPOTrainer`` take its reference model (``beta`` > 0) as a copy of
    ``policy``, the initial model, instead of loading it again from the policy's path.

    TRL re-reads the model from ``config._name_or_path``, which fails for a GGUF model (the
    bundled SmolLM2: its directory holds a .gguf file and no config.json) and reads the
    weights from disk a second time for a checkpoint; a copy is the same model either way.
    """
    import copy

    import trl.trainer.grpo_trainer as trl_grpo

    if policy is None or isinstance(policy, str):
        yield  # TRL loads a model named by its path itself
        return
    load = trl_grpo.create_model_from_path

    def copy_policy(model_id: str, architecture: Any = None, **kwargs: Any) -> Any:
        reference = copy.deepcopy(policy)
        if "dtype" in kwargs and kwargs["dtype"] not in (None, "auto"):
            reference = reference.to(kwargs["dtype"])
        return reference.eval()

    trl_grpo.create_model_from_path = copy_policy
    try:
        yield
    finally:
        trl_grpo.create_model_from_path = load


@functools.cache
def shared_prompt_trainer_class() -> type:
    """TRL's ``GRPOTrainer`` with a training pass that computes a group's shared prompt once.

    Built on first use so that importing this module does not import TRL.
    """
    from trl import GRPOTrainer

    class SharedPromptGRPOTrainer(GRPOTrainer):
        """``GRPOTrainer`` whose per-token log-probabilities run each shared prompt once.

        Overrides ``_get_per_token_logps_and_entropies`` (called by the loss, and for old
        or reference log-probabilities when TRL needs them) with
        :func:`shared_prompt_logps`; everything else — advantages, clipping, the loss,
        logging — is TRL's. Falls back to TRL's pass when rows share no prompt, for
        multimodal inputs, for MoE auxiliary losses, with gradient checkpointing (which
        drops KV caches), for prompt-learning adapters, or when ``shared_prompt`` is False.
        ``prompt_sharing`` counts calls of each kind, prompt passes and rows.
        """

        def __init__(
            self,
            *args: Any,
            shared_prompt: bool = True,
            keep_activations_gb: float | None = None,
            skip_flat_groups: bool = True,
            reference_cache_gb: float = 2.0,
            **kwargs: Any,
        ) -> None:
            with reference_copied_from(kwargs.get("model")):
                super().__init__(*args, **kwargs)
            self.shared_prompt = shared_prompt
            self.keep_activations_gb = keep_activations_gb
            self.skip_flat_groups = skip_flat_groups
            # The reference model's prompt keys and values, while its weights stay put.
            self.reference_cache = (
                PrefixCache(reference_cache_gb * 2**30)
                if reference_cache_gb > 0
                and self.ref_model is not None
                and not getattr(self.args, "sync_ref_model", False)
                else None
            )
            # The training pass's prompt forwards the rollouts ran (their keys and values
            # also spare the group's decoder reading the prompt).
            self.prompt_passes = PromptPasses(self)
            # The last generated batch's tool masks (1: a token the model sampled), which say
            # where a pass without gradients (reference, old log-probabilities) is read.
            self._generated_tool_masks: list[list[int]] | None = None
            self.prompt_sharing: dict[str, int] = {
                "shared_calls": 0,
                "fallback_calls": 0,
                "prompt_passes": 0,
                "rows": 0,
                "row_tokens": 0,
                "scored_tokens": 0,
                "shared_completion_tokens": 0,
                "recomputed_tokens": 0,  # of those, recomputed in the backward (not kept)
                "kept_activation_bytes": 0,  # estimated, summed over the passes with gradients
                "skipped_flat_batches": 0,
            }
            # The positions the loss being computed reads (completion_mask * tool_mask).
            self._loss_positions: Any = None
            # Activation bytes the last pass with gradients kept (freed after its backward).
            self._last_pass_kept = 0

        def _generate(self, prompts: list[Any]) -> Any:
            out = super()._generate(prompts)
            self._generated_tool_masks = out[2]
            return out

        def _read_positions(self, attention_mask: Any, logits_to_keep: int) -> Any:
            """Where the loss reads this batch's log-probabilities: the positions
            ``_compute_loss`` set, or (for a pass without gradients over the batch just
            generated) its completions' model tokens; None (every position) otherwise."""
            import torch

            positions = self._loss_positions
            n = len(attention_mask)
            if positions is None and not torch.is_grad_enabled():
                masks = self._generated_tool_masks
                if (
                    masks is not None
                    and len(masks) == n
                    and all(len(m) <= logits_to_keep for m in masks)
                ):
                    # padded with 1 as TRL pads them; the attention mask zeroes padding
                    padded = [list(m) + [1] * (logits_to_keep - len(m)) for m in masks]
                    tool = torch.tensor(padded, dtype=attention_mask.dtype)
                    positions = attention_mask[:, -logits_to_keep:] * tool.to(attention_mask.device)
            if positions is not None and tuple(positions.shape) != (n, logits_to_keep):
                positions = None  # not this batch's: score every position
            return positions

        def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
            """TRL's loss, with the head scoring only the positions the loss reads.

            TRL masks every per-token term of its loss, entropy bonus and metrics with
            ``completion_mask * tool_mask``; the environment's tokens in between are context
            whose log-probabilities it multiplies by 0, so they are not computed.
            """
            tool_mask = inputs.get("tool_mask")
            if tool_mask is not None:
                self._loss_positions = inputs["completion_mask"] * tool_mask
            try:
                return super()._compute_loss(model, inputs)
            finally:
                self._loss_positions = None

        def compute_loss(
            self,
            model: Any,
            inputs: dict[str, Any],
            return_outputs: bool = False,
            num_items_in_batch: Any = None,
        ) -> Any:
            """TRL's loss, or for a batch with all-zero advantages its exact zero gradient.

            Every TRL loss type scales each token's term by its advantage, so with no KL term
            (``beta`` 0) and no auxiliary loss such a batch has a gradient of exactly zero.
            Returning ``0 * weights`` gives every trainable weight that zero gradient
            without the forward and backward passes, so the optimizer (its moments, weight
            decay, schedule) steps exactly as it would have; only the batch's entropy and
            clipping metrics are not logged.
            """
            flat = not bool(inputs["advantages"].any())
            if self.skip_flat_groups and flat and self.beta == 0.0 and not self.aux_loss_enabled:
                self.prompt_sharing["skipped_flat_batches"] += 1
                weights = [p for p in model.parameters() if p.requires_grad]
                return sum((w * 0).sum() for w in weights)
            return super().compute_loss(
                model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
            )

        def _activation_limit(self) -> float:
            """Bytes of activations this pass may keep (``keep_activations_gb``; by default
            half of what the system has available now plus what this process holds freed
            for reuse, which the last pass's activations left; none where the system's
            figure is unknown).

            What is held freed: glibc's free heap, or under mimalloc keeping its freed pages
            (which nothing reports) the last training pass's kept activations, as the budget
            estimated them: their pages went back to mimalloc, resident, after the backward.
            The estimate is an upper bound (by ~1.2x for SmolLM2), so the limit settles a
            little above glibc's; without counting them, 16 thermal steps recomputed 2.5x as
            many tokens (the step's time barely changed there: bench/RESULTS.md, "The AMD
            EPYC VM with AVX-512 BF16").
            """
            if self.keep_activations_gb is not None:
                return self.keep_activations_gb * 2**30
            available = available_memory_bytes()
            if available is None:
                return 0.0
            reusable = free_heap_bytes()
            if keeps_freed_pages():
                reusable = max(reusable, self._last_pass_kept)
            return 0.5 * (available + reusable)

        def _can_share(self, model: Any, kwargs: dict[str, Any]) -> bool:
            if not self.shared_prompt or self.args.gradient_checkpointing:
                return False
            if kwargs.get("compute_aux_loss"):
                return False
            if any(kwargs.get(name) is not None for name in _MULTIMODAL_ARGS):
                return False
            peft_config = getattr(self.accelerator.unwrap_model(model), "active_peft_config", None)
            return not getattr(peft_config, "is_prompt_learning", False)

        def _get_per_token_logps_and_entropies(
            self,
            model: Any,
            input_ids: Any,
            attention_mask: Any,
            logits_to_keep: int,
            batch_size: int | None = None,
            compute_entropy: bool = False,
            **kwargs: Any,
        ) -> tuple[Any, Any, Any]:
            if self._can_share(model, kwargs):
                positions = self._read_positions(attention_mask, logits_to_keep)
                frozen = model is self.ref_model and self.reference_cache is not None
                kept_before = self.prompt_sharing.get("kept_activation_bytes", 0)
                with self.accelerator.autocast():
                    shared = shared_prompt_logps(
                        model,
                        input_ids,
                        attention_mask,
                        logits_to_keep,
                        compute_entropy=compute_entropy,
                        stats=self.prompt_sharing,
                        keep_activations=self._activation_limit(),
                        score_mask=positions,
                        temperature=self.temperature,
                        fp32_head=bool(getattr(self.args, "cast_lm_head_to_fp32", False)),
                        prompt_cache=self.reference_cache if frozen else None,
                        prompt_pass=self.prompt_passes.take if model is self.model else None,
                    )
                kept = self.prompt_sharing.get("kept_activation_bytes", 0) - kept_before
                if kept:
                    self._last_pass_kept = kept
                if shared is not None:
                    self.prompt_sharing["shared_calls"] += 1
                    return shared[0], shared[1], None
            self.prompt_sharing["fallback_calls"] += 1
            return super()._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size=batch_size,
                compute_entropy=compute_entropy,
                **kwargs,
            )

    return SharedPromptGRPOTrainer


def __getattr__(name: str) -> Any:
    """``SharedPromptGRPOTrainer`` on first access (importing this module does not import TRL)."""
    if name == "SharedPromptGRPOTrainer":
        return shared_prompt_trainer_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def train_grpo(
    tasks: list[str] | None = None,
    out: Path | None = None,
    model: str | None = None,
    max_steps: int | None = None,
    *,
    instances: list[Instance] | None = None,
    data: Path | None = None,
    options: GRPOOptions | None = None,
    ray_envs: Any = None,
    **overrides: Any,
) -> Path:
    """GRPO-train ``model`` (default: the bundled SmolLM2) by playing episodes of ``tasks``.

    Training problems are, in order of precedence: the JSONL file ``data`` (the TRL RL
    rows of ``bootcamp export rl --format trl``, ``{"prompt", "instance", "task"}``, or an
    instances file from ``bootcamp generate`` / ``synth``; restricted to ``tasks`` when
    given), ``instances``, or ``options.n_instances`` fresh instances per task. The loop
    calls it as ``train_grpo(data=..., out=..., model=..., max_steps=...)``. Each optimizer step plays
    ``prompts_per_step`` groups of ``num_generations`` episodes. ``max_steps`` defaults to
    one pass over the problems. ``ray_envs`` (a
    :class:`~agentharness.rollout.ray_backend.RayConfig`) holds the episodes on Ray
    workers, where their tools run, instead of in this process. Writes ``OUT/final``,
    ``OUT/rollouts`` (a run directory of every training episode) and
    ``OUT/train_summary.json``; returns ``OUT/final``.
    """
    if out is None:
        raise TypeError("train_grpo needs out (the output directory)")
    tasks = list(tasks or [])
    opts = options or GRPOOptions()
    if overrides:
        unknown = set(overrides) - set(GRPOOptions.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown GRPO option(s): {', '.join(sorted(unknown))}")
        opts = GRPOOptions(**{**asdict(opts), **overrides})
    if opts.num_generations < 2:
        raise TrainInputError(
            "GRPO needs num_generations >= 2 (advantages are relative within a group)"
        )
    if opts.reward_signal not in REWARD_FUNCS:
        raise TrainInputError(
            f"reward_signal {opts.reward_signal!r}: choose one of {', '.join(REWARD_FUNCS)}"
        )
    if opts.resample_flat < 0:
        raise TrainInputError(f"resample_flat is {opts.resample_flat}; give 0 (off) or more")
    if not opts.reference_cache_gb >= 0:
        raise TrainInputError(
            f"reference_cache_gb is {opts.reference_cache_gb}; give 0 (no cache) or a size in GB"
        )
    if opts.keep_activations_gb is not None and not opts.keep_activations_gb >= 0:
        raise TrainInputError(
            f"keep_activations_gb is {opts.keep_activations_gb}; give 0 (recompute every "
            "episode's activations) or more, or None (half the available memory)"
        )
    # "auto" becomes what this machine runs fast, and the summary records which
    opts = replace(
        opts,
        rollout_dtype=resolve_dtype(opts.rollout_dtype, "rollout_dtype"),
        train_dtype=resolve_dtype(opts.train_dtype, "train_dtype"),
    )
    rows = _training_rows(tasks, instances, data, opts)
    _check_task_budgets(opts.task_budgets, {row["task"] for row in rows})
    checkpoint = resume_checkpoint(out / "trainer", opts.resume)  # fail before loading a model
    steps = max_steps if max_steps is not None else math.ceil(len(rows) / opts.prompts_per_step)

    import os

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig

    from agentharness.store.run import RunDir

    started = time.time()
    net, tokenizer = load_trainable(model)
    tokenizer.padding_side = "left"
    random.Random(opts.seed).shuffle(rows)
    dataset = Dataset.from_list(rows)
    by_prompt: dict[str, list[Instance]] = {}
    for row in dataset:
        by_prompt.setdefault(prompt_key(row["prompt"]), []).append(
            Instance.model_validate_json(row["instance"])
        )
    log_dir = out / "rollouts"
    RunDir(log_dir).create(
        {
            "command": "train grpo",
            "tasks": tasks,
            "model": model or "smollm2",
            "options": asdict(opts),
        }
    )
    group = opts.num_generations
    if opts.shared_prompt:
        # A batch is a group (TRL shuffles the generation batch, so with several groups per
        # step a batch may mix them: each prompt is still computed once per batch). The
        # episodes run one at a time on top of the prompt's KV cache, never padded together.
        batch, accumulation = group, opts.prompts_per_step
    else:
        # TRL's own pass, one episode (prompt + completion) per forward/backward.
        batch, accumulation = 1, group * opts.prompts_per_step
    config = GRPOConfig(
        output_dir=str(out / "trainer"),
        max_steps=steps,
        # Either way one generation batch (prompts_per_step groups) per optimizer step.
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=accumulation,
        num_generations=group,
        max_completion_length=opts.max_completion_length,
        temperature=max(opts.temperature, 1e-3),
        top_p=opts.top_p,
        learning_rate=opts.learning_rate,
        beta=opts.beta,
        epsilon=opts.epsilon,
        num_iterations=opts.num_iterations,
        loss_type=opts.loss_type,
        scale_rewards=opts.scale_rewards,
        logging_steps=opts.logging_steps,
        **{
            **opts.training_args(),
            **opts.extra,
        },
    )
    envs = None
    if ray_envs is not None:
        from agentharness.rollout.ray_backend import RayEnvs

        envs = RayEnvs(ray_envs)
    roller = EpisodeRoller(net, tokenizer, opts, envs)
    streams = RolloutStreams.load(Path(checkpoint)) if checkpoint else RolloutStreams()
    trainer = shared_prompt_trainer_class()(
        shared_prompt=opts.shared_prompt,
        keep_activations_gb=opts.keep_activations_gb,
        skip_flat_groups=opts.skip_flat_groups,
        reference_cache_gb=opts.reference_cache_gb,
        model=net,
        reward_funcs=REWARD_FUNCS[opts.reward_signal],
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(opts.lora_r, opts.lora_alpha) if opts.lora else None,
        rollout_func=make_rollout_func(roller, by_prompt, log_dir, streams),
        callbacks=[streams_callback(streams)],
    )
    roller.model = trainer.model  # the (possibly peft-wrapped) model being optimized
    try:
        trainer.train(resume_from_checkpoint=checkpoint)
    finally:
        roller.envs.close()
    history = trainer.state.log_history
    losses = finite_losses(history)
    rewards = [float(h["reward"]) for h in history if "reward" in h]
    final = save_final(trainer.model, tokenizer, out / "final")
    write_json(
        out / "train_summary.json",
        {
            "kind": "grpo",
            "tasks": tasks,
            "model": model or "smollm2",
            "problems": len(rows),
            "steps": trainer.state.global_step,
            "losses": losses,
            "mean_reward_per_step": rewards,
            # TRL's per-step wall time: the group's rollouts and its training pass
            "step_seconds": [float(h["step_time"]) for h in history if "step_time" in h],
            "options": asdict(opts),
            "max_steps": max_steps,
            "seconds": round(time.time() - started, 1),
            "peak_resident_gb": peak_resident_gb(),
            "allocator": running_allocator(),
            "prompt_sharing": dict(trainer.prompt_sharing),
            # what the reference model's prompt cache reused and computed (None: no cache)
            "reference_prompt_tokens": None
            if (cache := trainer.reference_cache) is None
            else {"reused": cache.reused_tokens, "computed": cache.computed_tokens},
            "final": str(final),
            "rollouts": str(log_dir),
        },
    )
    return final


def _training_rows(
    tasks: list[str], instances: list[Instance] | None, data: Path | None, opts: GRPOOptions
) -> list[dict[str, Any]]:
    if data is not None:
        chosen = [i for i in read_problems(data) if not tasks or _matches(i.task, tasks)]
        if not chosen:
            raise TrainInputError(f"{data} holds no instance of {', '.join(tasks)}")
        return rl_rows(_playable(chosen, str(data)))
    if instances:
        return rl_rows(_playable(instances, "the instances given"))
    if not tasks:
        raise TrainInputError("train_grpo needs tasks, instances or data")
    for t in tasks:
        spec = get_task(t)
        if spec.modality != "text":
            print(
                f"[grpo] note: {spec.id} is a vision task; the model sees image placeholders",
                file=sys.stderr,
            )
    return rl_rows(training_instances(tasks, opts))


def _playable(instances: list[Instance], source: str) -> list[Instance]:
    """The instances an episode can start on (an unknown task version or data its task cannot
    read cannot); each other one is a warning line and is left out, not the end of the run."""
    from agentharness.core.registry import episode_for
    from agentharness.rollout.runner import describe_error

    kept = []
    for instance in instances:
        try:
            episode_for(instance)
        except Exception as e:  # data the task cannot use: say which, train on the rest
            print(
                f"[grpo] warning: skipped instance {instance.instance_id}: an episode cannot "
                f"start on it ({describe_error(e)})",
                file=sys.stderr,
            )
            continue
        kept.append(instance)
    if not kept:
        raise TrainInputError(
            f"no instance in {source} can start an episode (see the warnings above); "
            "regenerate them with `bootcamp generate`"
        )
    return kept


def read_problems(path: Path) -> list[Instance]:
    """Instances from TRL RL rows (``{"instance": ...}``) or from an instances JSONL file."""
    return read_instances(path)


def _matches(task_id: str, wanted: list[str]) -> bool:
    """Whether ``task_id`` is one of ``wanted`` (a versioned id, or a bare name for any version)."""
    name, _ = split_task_id(task_id)
    return any(w in (task_id, name) for w in wanted)
