# A stand-in for nanochat's first scripts/base_train.py (October 2025), written for vramdoc's tests:
# module globals overridden by nanochat/configurator.py instead of argparse flags.
from nanochat.gpt import GPT, GPTConfig

depth = 20
device_batch_size = 32
exec(open(os.path.join('nanochat', 'configurator.py')).read())
