# A stand-in for nanochat's scripts/chat_sft.py (github.com/karpathy/nanochat at 92d63d4), written
# for vramdoc's tests: recognized by its imports and its argparse parser, never run.
import argparse

from nanochat.checkpoint_manager import load_model

parser = argparse.ArgumentParser(description="Supervised fine-tuning (SFT) the model")
parser.add_argument("--model-tag", type=str, default=None)
args = parser.parse_args()
