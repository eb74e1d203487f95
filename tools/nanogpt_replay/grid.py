"""The scenarios replayed into ``tests/data/nanogpt_replay.json``.

Sizes follow nanoGPT's own configs: 6/6/384 is ``train_shakespeare_char`` (and
the project's cross-check model at block 512), 4/4/128 a tiny debug model,
12/12/768 GPT-2 small (124M). Vocabulary 50304 is GPT-2's padded to a
multiple of 64, 65 the Shakespeare character set.

``GRID`` holds plain training runs (one process, from scratch or from GPT-2
weights); ``RUNS`` holds the runs that differ from one: ``eval_only``,
``init_from='resume'`` and DDP (``ddp_world_size`` processes). GPT-2 weights
(``init_from='gpt2*'``) come with bias, vocabulary 50257 and block 1024
(``GPT.from_pretrained``), optionally cropped to a smaller block.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scenario:
    """One nanoGPT training setup, in train.py's vocabulary."""

    name: str
    n_layer: int
    n_head: int
    n_embd: int
    vocab_size: int
    block_size: int
    batch_size: int
    gradient_accumulation_steps: int
    dtype: str
    flash: bool
    bias: bool = False
    dropout: float = 0.0
    eval_batch: int | None = None
    init_from: str = "scratch"
    eval_only: bool = False
    ddp_world_size: int = 1
    freeze_embeddings: bool = False
    lora_rank: int = 0
    lora_targets: tuple[str, ...] = ()

    @property
    def eval_batch_size(self) -> int:
        """nanoGPT evaluates at the training micro-batch unless told otherwise."""
        return self.batch_size if self.eval_batch is None else self.eval_batch

    def as_json(self) -> dict:
        """The ``scenario`` object of the data file."""
        return {
            "n_layer": self.n_layer,
            "n_head": self.n_head,
            "n_embd": self.n_embd,
            "vocab_size": self.vocab_size,
            "block_size": self.block_size,
            "bias": self.bias,
            "dropout": self.dropout,
            "batch_size": self.batch_size,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
            "dtype": self.dtype,
            "flash": self.flash,
            "compile": False,
            "eval_batch_size": self.eval_batch_size,
            # Only where they apply, so the plain scenarios keep their bytes.
            **({"init_from": self.init_from} if self.init_from != "scratch" else {}),
            **({"eval_only": True} if self.eval_only else {}),
            **({"ddp_world_size": self.ddp_world_size} if self.ddp_world_size > 1 else {}),
            **({"freeze_embeddings": True} if self.freeze_embeddings else {}),
            **(
                {"lora_rank": self.lora_rank, "lora_targets": ",".join(self.lora_targets)}
                if self.lora_rank
                else {}
            ),
        }


def _s(name: str, size: tuple[int, int, int], vocab: int, block: int, batch: int,
       accum: int, dtype: str, flash: bool, **kw) -> Scenario:
    n_layer, n_head, n_embd = size
    return Scenario(name, n_layer, n_head, n_embd, vocab, block, batch, accum,
                    dtype, flash, **kw)


CHAR = (6, 6, 384)
TINY = (4, 4, 128)
GPT2 = (12, 12, 768)

GRID: list[Scenario] = [
    _s("char-6x384-s256-v65-b16-bf16-flash-acc1", CHAR, 65, 256, 16, 1, "bfloat16", True),
    _s("char-6x384-s256-v65-b16-bf16-flash-acc1-drop", CHAR, 65, 256, 16, 1, "bfloat16",
       True, dropout=0.1),
    _s("char-6x384-s256-v65-b8-fp16-manual-acc2-bias", CHAR, 65, 256, 8, 2, "float16",
       False, bias=True),
    _s("6x384-s512-v50304-b8-bf16-flash-acc2", CHAR, 50304, 512, 8, 2, "bfloat16", True),
    _s("6x384-s512-v50304-b8-fp32-flash-acc2", CHAR, 50304, 512, 8, 2, "float32", True),
    _s("6x384-s512-v50304-b8-bf16-manual-acc2", CHAR, 50304, 512, 8, 2, "bfloat16", False),
    _s("6x384-s512-v50304-b4-fp16-flash-acc4", CHAR, 50304, 512, 4, 4, "float16", True),
    _s("6x384-s512-v50304-b8-bf16-flash-acc1-eval16", CHAR, 50304, 512, 8, 1, "bfloat16",
       True, eval_batch=16),
    _s("tiny-4x128-s256-v65-b12-fp32-manual-acc1-bias", TINY, 65, 256, 12, 1, "float32",
       False, bias=True),
    _s("tiny-4x128-s256-v65-b1-bf16-manual-acc3-bias", TINY, 65, 256, 1, 3, "bfloat16",
       False, bias=True),
    _s("tiny-4x128-s128-v50304-b16-bf16-flash-acc1", TINY, 50304, 128, 16, 1, "bfloat16",
       True),
    _s("gpt2-12x768-s1024-b12-bf16-flash-acc2-bias", GPT2, 50304, 1024, 12, 2, "bfloat16",
       True, bias=True),
    _s("gpt2-12x768-s1024-b8-fp32-flash-acc1-bias", GPT2, 50304, 1024, 8, 1, "float32",
       True, bias=True),
    _s("gpt2-12x768-s1024-b4-bf16-manual-acc2-bias", GPT2, 50304, 1024, 4, 2, "bfloat16",
       False, bias=True),
    _s("gpt2-12x768-s1024-b16-bf16-flash-acc1", GPT2, 50304, 1024, 16, 1, "bfloat16", True),
    _s("gpt2-12x768-s512-b1-fp32-manual-acc1-bias", GPT2, 50304, 512, 1, 1, "float32", False,
       bias=True),
    _s("mid-8x512-s256-v50304-b6-bf16-flash-acc3-bias", (8, 8, 512), 50304, 256, 6, 3,
       "bfloat16", True, bias=True),
    _s("6x384-s1024-v50304-b2-fp16-manual-acc2", CHAR, 50304, 1024, 2, 2, "float16", False),
    _s("char-6x384-s256-v65-b32-fp32-flash-acc2", CHAR, 65, 256, 32, 2, "float32", True),
    _s("char-6x384-s256-v65-b64-bf16-flash-acc1-drop", CHAR, 65, 256, 64, 1, "bfloat16", True,
       dropout=0.2),
    _s("tiny-4x128-s64-v65-b4-fp16-flash-acc2", TINY, 65, 64, 4, 2, "float16", True),
]

# GPT.from_pretrained's shapes: (n_layer, n_head, n_embd), vocab 50257, block
# 1024, bias on.
PRETRAINED = {
    "gpt2": (12, 12, 768),
    "gpt2-medium": (24, 16, 1024),
    "gpt2-large": (36, 20, 1280),
    "gpt2-xl": (48, 25, 1600),
}


def _gpt2(name: str, init_from: str, block: int, batch: int, accum: int, dtype: str,
          flash: bool, **kw) -> Scenario:
    """A run that starts from OpenAI's GPT-2 weights (``init_from='gpt2*'``)."""
    return _s(name, PRETRAINED[init_from], 50257, block, batch, accum, dtype, flash,
              bias=True, init_from=init_from, **kw)


GRID += [
    # Fine-tunes (config/finetune_shakespeare.py style), at block 1024 and
    # cropped (crop_block_size).
    _gpt2("ft-gpt2-s1024-b4-bf16-flash-acc2", "gpt2", 1024, 4, 2, "bfloat16", True),
    _gpt2("ft-gpt2-s256-b8-fp16-flash-acc2", "gpt2", 256, 8, 2, "float16", True),
    _gpt2("ft-gpt2-medium-s1024-b1-bf16-flash-acc2", "gpt2-medium", 1024, 1, 2, "bfloat16",
          True),
    _gpt2("ft-gpt2-medium-s512-b2-bf16-manual-acc1", "gpt2-medium", 512, 2, 1, "bfloat16",
          False),
]

ATTN = ("attn.c_attn",)
ALL_LINEAR = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")

GRID += [
    # Fine-tuning patches on GPT-2 weights (not in nanoGPT; see model.py):
    # frozen embeddings (wte = lm_head.weight, and wpe) and LoRA adapters
    # (every base parameter frozen). GPT-2 XL at finetune_shakespeare.py's
    # micro-batch 1, then smaller models for the other code paths: fp16 and
    # fp32, manual attention, dropout (the embedding dropout's mask), no
    # accumulation, a first adapter after the attention (block 0 saves
    # nothing before it).
    _gpt2("ft-gpt2-xl-s1024-b1-bf16-flash-acc2-frozen-emb", "gpt2-xl", 1024, 1, 2,
          "bfloat16", True, freeze_embeddings=True),
    _gpt2("ft-gpt2-xl-s1024-b1-bf16-flash-acc2-lora8-attn", "gpt2-xl", 1024, 1, 2,
          "bfloat16", True, lora_rank=8, lora_targets=ATTN),
    _gpt2("ft-gpt2-xl-s512-b2-bf16-flash-acc2-lora16-all", "gpt2-xl", 512, 2, 2,
          "bfloat16", True, lora_rank=16, lora_targets=ALL_LINEAR),
    _gpt2("ft-gpt2-s512-b4-fp16-manual-acc1-frozen-emb-drop", "gpt2", 512, 4, 1,
          "float16", False, freeze_embeddings=True, dropout=0.1),
    _gpt2("ft-gpt2-s512-b4-fp32-flash-acc2-lora4-all", "gpt2", 512, 4, 2, "float32",
          True, lora_rank=4, lora_targets=ALL_LINEAR),
    _gpt2("ft-gpt2-medium-s256-b4-fp16-manual-acc2-lora8-proj-fc-drop", "gpt2-medium",
          256, 4, 2, "float16", False, lora_rank=8,
          lora_targets=("attn.c_proj", "mlp.c_fc"), dropout=0.1),
    _gpt2("ft-gpt2-medium-s1024-b2-bf16-flash-acc1-lora8-mlp", "gpt2-medium", 1024, 2, 1,
          "bfloat16", True, lora_rank=8, lora_targets=("mlp.c_fc", "mlp.c_proj")),
]

RUNS: list[Scenario] = [
    # eval_only=True (config/eval_gpt2*.py: batch 8, block 1024): weights and
    # estimate_loss() only.
    _s("eval-char-6x384-s256-v65-b64-bf16-flash", CHAR, 65, 256, 64, 1, "bfloat16", True,
       eval_only=True),
    _s("eval-char-6x384-s256-v65-b64-fp16-flash", CHAR, 65, 256, 64, 1, "float16", True,
       eval_only=True),
    _gpt2("eval-gpt2-s1024-b8-bf16-flash", "gpt2", 1024, 8, 1, "bfloat16", True,
          eval_only=True),
    _gpt2("eval-gpt2-s1024-b8-fp16-flash", "gpt2", 1024, 8, 1, "float16", True,
          eval_only=True),
    _gpt2("eval-gpt2-xl-s1024-b8-bf16-flash", "gpt2-xl", 1024, 8, 1, "bfloat16", True,
          eval_only=True),
    _gpt2("eval-gpt2-xl-s1024-b8-fp16-flash", "gpt2-xl", 1024, 8, 1, "float16", True,
          eval_only=True),
    # init_from='resume': the checkpoint is loaded onto the GPU.
    _s("resume-char-6x384-s256-v65-b64-bf16-flash-acc1", CHAR, 65, 256, 64, 1, "bfloat16",
       True, init_from="resume"),
    _s("resume-6x384-s512-v50304-b8-bf16-manual-acc2", CHAR, 50304, 512, 8, 2, "bfloat16",
       False, init_from="resume"),
    _s("resume-gpt2-12x768-s1024-b12-bf16-flash-acc2-bias", GPT2, 50304, 1024, 12, 2,
       "bfloat16", True, bias=True, init_from="resume"),
    # DDP: train.py's gradient_accumulation_steps = 4, divided by the world
    # size (the scenario records the per-process value).
    _s("ddp2-gpt2-12x768-s1024-b12-bf16-flash-acc2-bias", GPT2, 50304, 1024, 12, 2,
       "bfloat16", True, bias=True, ddp_world_size=2),
    _s("ddp4-gpt2-12x768-s1024-b12-bf16-flash-acc1-bias", GPT2, 50304, 1024, 12, 1,
       "bfloat16", True, bias=True, ddp_world_size=4),
]
