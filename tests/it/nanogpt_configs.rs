//! Every config file in nanoGPT's `config/` folder and every training command of its README,
//! resolved to the run nanoGPT does. The files are written here in the shape of nanoGPT's (our own
//! text, the same statements: imports, `time.time()` in a run name, comments, `5 * 8`).

use crate::support::SiteTest;

const TRAIN_GPT2: &str = "# config for training GPT-2 (124M) down to very nice loss of ~2.85 on 1 node of 8X A100 40GB\n\
wandb_log = True\nwandb_project = 'owt'\nwandb_run_name='gpt2-124M'\n\n\
# these make the total batch size be ~0.5M\n# 12 batch size * 1024 block size * 5 gradaccum * 8 GPUs = 491,520\n\
batch_size = 12\nblock_size = 1024\ngradient_accumulation_steps = 5 * 8\n\n\
max_iters = 600000\nlr_decay_iters = 600000\neval_interval = 1000\neval_iters = 200\nlog_interval = 10\nweight_decay = 1e-1\n";

const TRAIN_SHAKESPEARE_CHAR: &str = "# train a miniature character-level shakespeare model\n\
out_dir = 'out-shakespeare-char'\neval_interval = 250 # keep frequent because we'll overfit\neval_iters = 200\nlog_interval = 10\n\
always_save_checkpoint = False\nwandb_log = False\nwandb_project = 'shakespeare-char'\nwandb_run_name = 'mini-gpt'\n\
dataset = 'shakespeare_char'\ngradient_accumulation_steps = 1\nbatch_size = 64\nblock_size = 256 # context of up to 256 previous characters\n\
n_layer = 6\nn_head = 6\nn_embd = 384\ndropout = 0.2\nlearning_rate = 1e-3\nmax_iters = 5000\nlr_decay_iters = 5000\nmin_lr = 1e-4\nbeta2 = 0.99\nwarmup_iters = 100\n\
# on macbook also add\n# device = 'cpu'  # run on cpu only\n# compile = False # do not torch compile the model\n";

const FINETUNE_SHAKESPEARE: &str = "import time\n\nout_dir = 'out-shakespeare'\neval_interval = 5\neval_iters = 40\n\
wandb_log = False # feel free to turn on\nwandb_project = 'shakespeare'\nwandb_run_name = 'ft-' + str(time.time())\n\n\
dataset = 'shakespeare'\ninit_from = 'gpt2-xl' # this is the largest GPT-2 model\n\n\
# only save checkpoints if the validation loss improves\nalways_save_checkpoint = False\n\n\
# the number of examples per iter:\n# 1 batch_size * 32 grad_accum * 1024 tokens = 32,768 tokens/iter\n\
batch_size = 1\ngradient_accumulation_steps = 32\nmax_iters = 20\n\n# finetune at constant LR\nlearning_rate = 3e-5\ndecay_lr = False\n";

fn eval_config(model: &str) -> String {
    format!("# evaluate the base {model}\nbatch_size = 8\neval_iters = 500 # use more iterations to get good estimate\neval_only = True\nwandb_log = False\ninit_from = '{model}'\n")
}

fn nanogpt() -> SiteTest {
    let t = SiteTest::new();
    t.file("config/train_gpt2.py", TRAIN_GPT2);
    t.file("config/train_shakespeare_char.py", TRAIN_SHAKESPEARE_CHAR);
    t.file("config/finetune_shakespeare.py", FINETUNE_SHAKESPEARE);
    for model in ["gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"] {
        let name = if model == "gpt2" {
            "eval_gpt2.py".to_string()
        } else {
            format!("eval_{}.py", model.replace('-', "_"))
        };
        t.file(&format!("config/{name}"), &eval_config(model));
    }
    let meta = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/nanogpt/data/shakespeare_char/meta.pkl");
    t.bytes(
        "data/shakespeare_char/meta.pkl",
        &std::fs::read(meta).unwrap(),
    );
    t
}

/// `vramdoc estimate ARGS --format json`'s scenario, per-GPU accumulation and stderr.
fn resolve(t: &SiteTest, args: &[&str]) -> (serde_json::Value, String) {
    let mut all = vec!["estimate"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    (serde_json::from_str(&r.stdout).unwrap(), r.stderr)
}

fn shape(v: &serde_json::Value) -> [u64; 6] {
    let s = &v["scenario"];
    [
        "n_layer",
        "n_head",
        "n_embd",
        "vocab_size",
        "block_size",
        "batch_size",
    ]
    .map(|k| s[k].as_u64().unwrap())
}

#[test]
fn every_config_file_resolves_to_nanogpts_run() {
    let t = nanogpt();
    let (v, _) = resolve(&t, &["config/train_gpt2.py"]);
    assert_eq!(shape(&v), [12, 12, 768, 50304, 1024, 12]);
    assert_eq!(v["scenario"]["gradient_accumulation_steps"], 40);

    let (v, err) = resolve(&t, &["config/train_shakespeare_char.py"]);
    assert_eq!(shape(&v), [6, 6, 384, 65, 256, 64]);
    assert_eq!(v["scenario"]["dropout"], 0.2);
    assert!(err.contains("meta.pkl"), "{err}");

    let (v, err) = resolve(&t, &["config/finetune_shakespeare.py"]);
    assert_eq!(shape(&v), [48, 25, 1600, 50257, 1024, 1]);
    assert_eq!(v["scenario"]["bias"], true);
    assert_eq!(v["scenario"]["gradient_accumulation_steps"], 32);
    assert_eq!(v["params"]["total"], 1_557_611_200u64);
    assert!(
        err.contains("wandb_run_name"),
        "the run name's time.time() is noted: {err}"
    );

    for (file, layers) in [
        ("eval_gpt2.py", 12),
        ("eval_gpt2_medium.py", 24),
        ("eval_gpt2_large.py", 36),
        ("eval_gpt2_xl.py", 48),
    ] {
        let (v, _) = resolve(&t, &[&format!("config/{file}")]);
        assert_eq!(v["scenario"]["n_layer"], layers, "{file}");
        assert_eq!(v["scenario"]["eval_only"], true, "{file}");
        assert_eq!(v["bytes"]["optimizer"], 0, "{file}: no optimizer state");
        assert_eq!(v["bytes"]["peak"], v["bytes"]["eval_first_peak"], "{file}");
        // No training options for a run that does not train.
        for option in v["what_if"].as_array().unwrap() {
            let kind = option["kind"].as_str().unwrap();
            assert!(
                ![
                    "micro_batch",
                    "max_micro_batch",
                    "grad_checkpoint",
                    "optimizer",
                    "eval_batch"
                ]
                .contains(&kind),
                "{file}: {kind}"
            );
        }
    }
}

#[test]
fn every_readme_training_command_resolves_to_nanogpts_run() {
    let t = nanogpt();
    // python train.py config/train_shakespeare_char.py
    let (v, _) = resolve(&t, &["config/train_shakespeare_char.py"]);
    assert_eq!(v["scenario"]["vocab_size"], 65);
    // python train.py config/train_shakespeare_char.py --device=cpu --compile=False ... (CPU)
    let r = t.run(&[
        "estimate",
        "config/train_shakespeare_char.py",
        "--device=cpu",
        "--compile=False",
        "--eval_iters=20",
        "--log_interval=1",
        "--block_size=64",
        "--batch_size=12",
        "--n_layer=4",
        "--n_head=4",
        "--n_embd=128",
        "--max_iters=2000",
        "--lr_decay_iters=2000",
        "--dropout=0.0",
    ]);
    assert!(
        r.code != 0 && r.stderr.contains("device = 'cpu'"),
        "{}",
        r.stderr
    );
    // The same on an Apple GPU: --device=mps.
    let r = t.run(&[
        "estimate",
        "config/train_shakespeare_char.py",
        "--device=mps",
    ]);
    assert!(
        r.code != 0 && r.stderr.contains("device = 'mps'"),
        "{}",
        r.stderr
    );
    // torchrun --standalone --nproc_per_node=8 train.py config/train_gpt2.py
    let (v, _) = resolve(&t, &["config/train_gpt2.py", "--nproc_per_node=8"]);
    assert_eq!(v["scenario"]["ddp_world_size"], 8);
    assert_eq!(v["accumulation_per_gpu"], 5);
    assert_eq!(
        v["tokens_per_step"], 491_520,
        "the README's ~0.5M tokens per step"
    );
    // Two nodes of 8: train.py asserts 40 % 16 == 0 and stops, and so does the estimate.
    let r = t.run(&[
        "estimate",
        "config/train_gpt2.py",
        "--nproc-per-node",
        "8",
        "--nnodes",
        "2",
    ]);
    assert!(
        r.code != 0 && r.stderr.contains("multiple of the 16 DDP processes"),
        "{}",
        r.stderr
    );
    // python train.py config/finetune_shakespeare.py
    let (v, _) = resolve(&t, &["config/finetune_shakespeare.py"]);
    assert_eq!(v["scenario"]["init_from"], "gpt2-xl");
    // python train.py config/eval_gpt2.py (and _medium, _large, _xl)
    let (v, _) = resolve(&t, &["config/eval_gpt2.py"]);
    assert_eq!(v["train_peak_moment"], "no_training");
}

/// The settings block of nanoGPT's `sample.py`, in its shape (our own text): it ends at the
/// configurator line, as train.py's does.
const SAMPLE_PY: &str = "\"\"\"\nSample from a trained model\n\"\"\"\nimport os\nimport torch\n\
from model import GPTConfig, GPT\n\n\
init_from = 'resume' # 'resume' or a gpt2 variant\nout_dir = 'out'\nstart = \"\\n\"\n\
num_samples = 10 # number of samples to draw\nmax_new_tokens = 500\ntemperature = 0.8\ntop_k = 200\n\
seed = 1337\ndevice = 'cuda'\n\
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'\n\
compile = False\nexec(open('configurator.py').read())\n\nmodel = None\n";

#[test]
fn sampling_with_sample_py_is_refused_not_estimated_as_training() {
    let t = nanogpt();
    t.file("sample.py", SAMPLE_PY);
    // python sample.py --init_from=gpt2-xl (nanoGPT's README), and with other settings.
    for args in [
        vec![
            "estimate",
            "sample.py",
            "--init_from=gpt2-xl",
            "--gpu",
            "rtx-3090",
        ],
        vec!["estimate", "sample.py", "--out_dir=out-shakespeare-char"],
        vec![
            "estimate",
            "sample.py",
            "--start=What is the answer?",
            "--num_samples=5",
            "--max_new_tokens=100",
            "--format",
            "json",
        ],
    ] {
        let r = t.run(&args);
        assert_ne!(r.code, 0, "{args:?} was estimated:\n{}", r.stdout);
        assert!(r.stdout.is_empty(), "{args:?} printed an estimate");
        // Located where the setting was last made: the file's line, or the override.
        let at = if args.contains(&"--num_samples=5") {
            "--num_samples=5: "
        } else {
            "sample.py:11:"
        };
        assert!(
            r.stderr.contains(at)
                && r.stderr
                    .contains("`num_samples` is a setting of nanoGPT's sample.py"),
            "{args:?}: {}",
            r.stderr
        );
    }
    // The same refusal when the sampling setting comes from the command line alone.
    t.file(
        "just_resume.py",
        "init_from = 'resume'\nmax_new_tokens = 64\n",
    );
    let r = t.run(&["estimate", "just_resume.py"]);
    assert!(
        r.code != 0
            && r.stderr
                .contains("`max_new_tokens` is a setting of nanoGPT's sample.py"),
        "{}",
        r.stderr
    );
}
