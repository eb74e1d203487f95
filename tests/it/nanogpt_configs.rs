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
pub(crate) const SAMPLE_PY: &str = "\"\"\"\nSample from a trained model\n\"\"\"\nimport os\nimport torch\n\
from model import GPTConfig, GPT\n\n\
init_from = 'resume' # 'resume' or a gpt2 variant\nout_dir = 'out'\nstart = \"\\n\"\n\
num_samples = 10 # number of samples to draw\nmax_new_tokens = 500\ntemperature = 0.8\ntop_k = 200\n\
seed = 1337\ndevice = 'cuda'\n\
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'\n\
compile = False\nexec(open('configurator.py').read())\n\nmodel = None\n";

/// `vramdoc estimate ARGS --format json` in `t`, as a JSON value.
fn sample_json(t: &SiteTest, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["estimate", "sample.py"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

#[test]
fn nanogpts_readme_sampling_commands_give_a_sampling_estimate() {
    let t = nanogpt();
    t.file("sample.py", SAMPLE_PY);
    // python sample.py --init_from=gpt2-xl --start="What is the answer to life, the universe, and
    // everything?" --num_samples=5 --max_new_tokens=100 (nanoGPT's README), on an RTX 3090.
    let v = sample_json(
        &t,
        &[
            "--init_from=gpt2-xl",
            "--start=What is the answer to life, the universe, and everything?",
            "--num_samples=5",
            "--max_new_tokens=100",
            "--gpu",
            "rtx-3090",
        ],
    );
    assert_eq!(v["phase"], "generate");
    assert_eq!(v["scenario"]["n_layer"], 48);
    assert_eq!(v["scenario"]["block_size"], 1024);
    // GPT-2 XL: 1,557,611,200 parameters in float32 on the GPU, and autocast's bf16 copy of the
    // 1,555,662,400 Linear weights and biases (every block's four Linears and the tied head).
    assert_eq!(v["params"]["total"], 1_557_611_200u64);
    assert_eq!(v["bytes"]["weights"], 4 * 1_557_611_200u64);
    assert_eq!(v["bytes"]["autocast_weights"], 2 * 1_555_662_400u64);
    assert_eq!(v["bytes"]["checkpoint"], 0);
    assert_eq!(v["bytes"]["kv_cache"], 0);
    // The prompt is 57 bytes, so at most 57 tokens; 100 new ones: the longest context is 156.
    assert_eq!(v["sampling"]["prompt_tokens"], 57);
    assert_eq!(v["context_tokens"], 156);
    let peak = v["bytes"]["peak"].as_u64().unwrap();
    assert!(
        peak > 6 * 1_557_611_200 && peak < 6 * 1_557_611_200 + (64 << 20),
        "{peak}"
    );
    assert_eq!(
        v["verdict"], "fits",
        "sampling GPT-2 XL needs about 9 GiB, not 77"
    );
    // python sample.py --out_dir=out-gpt2-xl after the README's fine-tune: sample.py keeps the
    // loaded checkpoint (weights, and AdamW's two moments and fp32 step per tensor) on the GPU.
    t.bytes(
        "out-gpt2-xl/ckpt.pt",
        &std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/nanogpt/out-gpt2-xl/ckpt.pt"
        ))
        .unwrap(),
    );
    let v = sample_json(&t, &["--out_dir=out-gpt2-xl", "--gpu", "rtx-3090"]);
    assert_eq!(v["scenario"]["init_from"], "resume");
    assert_eq!(
        v["bytes"]["checkpoint"],
        12 * 1_557_611_200u64 + 4 * 580,
        "weights, two moments, a step per tensor (194 + 386 tensors)"
    );
    assert_eq!(v["verdict"], "does_not_fit");
    // A card without bf16: sample.py's dtype expression picks float16.
    let v = sample_json(&t, &["--init_from=gpt2", "--gpu", "rtx-2080"]);
    assert_eq!(v["scenario"]["dtype"], "float16");
}

#[test]
fn sampling_settings_read_as_sample_py_reads_them() {
    let t = nanogpt();
    t.file("sample.py", SAMPLE_PY);
    // start = 'FILE:prompt.txt' reads the prompt from the file.
    t.file("prompt.txt", &"word ".repeat(400));
    let v = sample_json(&t, &["--init_from=gpt2", "--start=FILE:prompt.txt"]);
    assert_eq!(v["sampling"]["prompt_tokens"], 2000);
    assert_eq!(v["context_tokens"], 1024, "cropped to GPT-2's context");
    let r = t.run(&[
        "estimate",
        "sample.py",
        "--init_from=gpt2",
        "--start=FILE:nope.txt",
    ]);
    assert!(r.code != 0 && r.stderr.contains("nope.txt"), "{}", r.stderr);
    // sample.py cannot sample from a new model.
    let r = t.run(&["estimate", "sample.py", "--init_from=scratch"]);
    assert!(
        r.code != 0 && r.stderr.contains("samples from a trained model"),
        "{}",
        r.stderr
    );
    // Settings that would fail in nanoGPT are refused where they are set.
    for bad in ["--max_new_tokens=0", "--num_samples=0", "--top_k=0"] {
        let r = t.run(&["estimate", "sample.py", "--init_from=gpt2", bad]);
        assert!(r.code != 0 && r.stderr.contains(bad), "{bad}: {}", r.stderr);
    }
    // The table says what it estimates and lists what has no effect.
    let r = t.run(&["estimate", "sample.py", "--init_from=gpt2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("sampling with nanoGPT's sample.py"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("Ignored, no effect on memory: out_dir, temperature, seed, device"),
        "{}",
        r.stdout
    );
    // A block_size given to a GPT-2 sampling run is not sample.py's: 1024 is used, and said.
    let r = t.run(&[
        "estimate",
        "sample.py",
        "--init_from=gpt2",
        "--block_size=256",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("block_size is not a setting of sample.py"),
        "{}",
        r.stderr
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["scenario"]["block_size"], 1024);
    // compile = True is estimated as eager sampling, and says so.
    let r = t.run(&[
        "estimate",
        "sample.py",
        "--init_from=gpt2",
        "--compile=True",
    ]);
    assert!(
        r.code == 0
            && r.stderr
                .contains("compile = True: sampling is estimated as it runs eagerly"),
        "{}",
        r.stderr
    );
    // The same settings through a training config are a training estimate, as before.
    let (v, _) = resolve(&t, &["config/train_gpt2.py"]);
    assert!(v.get("phase").is_none());
}

#[test]
fn diagnose_matches_a_sampling_config_against_samplings_tensors_not_trainings() {
    let t = nanogpt();
    t.file("sample.py", SAMPLE_PY);
    let r = t.run(&[
        "diagnose",
        "--message",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 11.69 GiB of which 10.00 MiB is free. Including non-PyTorch memory, this process has 11.67 GiB memory in use. Of the allocated memory 11.40 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.",
        "--config",
        "sample.py",
        "--set",
        "init_from='gpt2'",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    // The estimate is sampling's, not a training step's.
    assert_eq!(v["generation"]["phase"], "generate");
    assert!(v["estimate"].is_null());
    // GPT-2's sampling (flash: no score matrix) makes no 20 MiB tensor: none is named, and an
    // estimate of about 1 GiB cannot be a run that held 11.4 GiB.
    assert!(v["identified"]["tensor"].is_null());
    let kinds: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"scenario_cannot_be_the_run"), "{kinds:?}");
}
