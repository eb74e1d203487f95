# A stand-in for nanochat's scripts/base_train.py (github.com/karpathy/nanochat at 92d63d4), written
# for vramdoc's tests: vramdoc recognizes the script by what it imports and by its argparse parser,
# then reads the command line's flags with the pinned commit's defaults. It does not run this file.
import argparse

from nanochat.gpt import GPT, GPTConfig

parser = argparse.ArgumentParser(description="Pretrain base model")
parser.add_argument("--depth", type=int, default=20)
parser.add_argument("--device-batch-size", type=int, default=32)
parser.add_argument("--max-seq-len", type=int, default=2048)
args = parser.parse_args()
