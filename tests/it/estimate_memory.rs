//! Memory figures: the contract's identities, seed 002's logits tensor, and docs/memory-model.md's
//! closed forms recomputed here by hand.

use vramdoc::estimate::{estimate, Dtype, Estimate, GpuCatalog, PeakPhase, Scenario, TrainMoment};

fn est(s: &Scenario) -> Estimate {
    estimate(s, &GpuCatalog::builtin()).expect("valid scenario")
}

fn eager(l: u64, a: u64, h: u64, v: u64, s: u64, b: u64) -> Scenario {
    Scenario {
        n_layer: l,
        n_head: a,
        n_embd: h,
        vocab_size: v,
        block_size: s,
        batch_size: b,
        compile: false,
        ..Scenario::default()
    }
}

#[test]
fn seed_002_logits_tensor() {
    let s = Scenario {
        batch_size: 64,
        ..Scenario::default()
    };
    let e = est(&s);
    assert_eq!(e.bytes.logits_tensor, 64 * 1024 * 50304 * 2);
    assert_eq!(e.bytes.logits_tensor, 6_593_445_888);
    assert_eq!(e.bytes.eval_logits_tensor, 6_593_445_888);
    let fp32 = est(&Scenario {
        dtype: Dtype::Float32,
        ..s
    });
    assert_eq!(fp32.bytes.logits_tensor, 2 * 6_593_445_888);
}

#[test]
fn contract_identities() {
    for s in [
        Scenario::default(),
        eager(6, 6, 384, 65, 256, 64),
        Scenario {
            flash: false,
            gradient_accumulation_steps: 1,
            ..eager(4, 4, 128, 65, 512, 8)
        },
        Scenario {
            grad_checkpoint: true,
            dtype: Dtype::Float32,
            ..Scenario::default()
        },
    ] {
        let e = est(&s);
        let b = e.bytes;
        assert_eq!(
            b.weights + b.gradients + b.optimizer + b.autocast_weights + b.activations + b.logits,
            b.train_peak
        );
        assert_eq!(b.peak, b.train_peak.max(b.eval_peak));
        assert_eq!(e.peak_phase == PeakPhase::Eval, b.eval_peak > b.train_peak);
        assert_eq!(
            b.overhead,
            b.cuda_context + b.allocator_slack + b.cublas_workspace
        );
        assert_eq!(b.total, b.peak + b.overhead);
        assert!(b.eval_first_peak <= b.eval_peak);
        assert_eq!(
            e.effective_batch,
            s.batch_size * s.gradient_accumulation_steps
        );
        assert_eq!(e.tokens_per_step, e.effective_batch * s.block_size);
    }
}

#[test]
fn autocast_eager_peak_from_the_cuda_op_stream() {
    // Large vocabulary: the peak is nll_loss's backward. docs/memory-model.md's form
    // 16P + 2·P_lin + L·36·sbh + 6·sbh + k·sbV, with k = 12 as CUDA autocast dispatches
    // cross-entropy (kept bf16 logits 2, bf16 log-softmax 2, nll_loss's fp32 copy 4 and its fp32
    // gradient 4), plus flash's fp32 logsumexp (4·a·s·b per layer) and four int64 token tensors.
    let (l, a, h, v, s, b) = (6u64, 6u64, 384u64, 50304u64, 512u64, 16u64);
    let p = v * h + s * h + l * (12 * h * h + 2 * h) + h;
    let p_lin = l * 12 * h * h + v * h;
    let (sbh, sbv) = (s * b * h, s * b * v);
    let expected =
        16 * p + 2 * p_lin + l * 36 * sbh + 6 * sbh + 12 * sbv + l * 4 * a * s * b + 4 * 8 * b * s;
    let e = est(&eager(l, a, h, v, s, b));
    assert_eq!(e.bytes.train_peak, expected);
    assert_eq!(e.bytes.weights, 4 * p);
    assert_eq!(e.bytes.gradients, 4 * p);
    assert_eq!(e.bytes.optimizer, 8 * p);
    assert_eq!(e.bytes.autocast_weights, 2 * p_lin);
    assert_eq!(e.bytes.logits, 12 * sbv);
    // Evaluation at iteration 0: weights, the weight copies, previous and new logits, the bf16
    // log-softmax and nll_loss's fp32 copy (2+2+2+4 per element), the forward's locals tok_emb
    // (fp32 sbh), pos_emb (fp32 s·h) and ln_f's fp32 output, and X, Y. Later evaluations add
    // AdamW's 8P.
    let eval_first = 4 * p + 2 * p_lin + 10 * sbv + 4 * sbh + 4 * s * h + 4 * sbh + 2 * 8 * b * s;
    assert_eq!(e.bytes.eval_first_peak, eval_first);
    assert_eq!(e.bytes.eval_peak, eval_first + 8 * p);
}

#[test]
fn small_vocabulary_peaks_at_the_end_of_the_forward() {
    // shakespeare_char-sized, one micro-step: no gradients yet (12P); every activation saved,
    // plus the forward's locals (tok_emb, pos_emb, ln_f's fp32 output), previous and new
    // logits, bf16 log-softmax and fp32 copy (10·sbV), and the current X, Y.
    let (l, a, h, v, s, b) = (6u64, 6u64, 384u64, 65u64, 256u64, 16u64);
    let p = v * h + s * h + l * (12 * h * h + 2 * h) + h;
    let p_lin = l * 12 * h * h + v * h;
    let (sbh, sbv) = (s * b * h, s * b * v);
    let sc = Scenario {
        gradient_accumulation_steps: 1,
        ..eager(l, a, h, v, s, b)
    };
    let e = est(&sc);
    let saved = l * (36 * sbh + 4 * a * s * b) + 6 * sbh;
    let expected =
        12 * p + 2 * p_lin + saved + 4 * sbh + 4 * s * h + 4 * sbh + 10 * sbv + 2 * 8 * b * s;
    assert_eq!(e.bytes.train_peak, expected);
    assert_eq!(e.train_peak_moment, TrainMoment::LossForward);
}

#[test]
fn fp32_eager_peak_matches_the_notes_closed_form() {
    // 16P + L·64·sbh + 8·sbh + 16·sbV (kept logits, log-softmax, its gradient and the result,
    // 4 bytes each), no autocast copies.
    let (l, a, h, v, s, b) = (4u64, 4u64, 128u64, 50304u64, 256u64, 4u64);
    let p = v * h + s * h + l * (12 * h * h + 2 * h) + h;
    let (sbh, sbv) = (s * b * h, s * b * v);
    let sc = Scenario {
        dtype: Dtype::Float32,
        ..eager(l, a, h, v, s, b)
    };
    let e = est(&sc);
    let expected = 16 * p + l * 64 * sbh + 8 * sbh + 16 * sbv + l * 4 * a * s * b + 32 * b * s;
    assert_eq!(e.bytes.train_peak, expected);
    assert_eq!(e.bytes.autocast_weights, 0);
}

#[test]
fn tiny_batches_peak_at_the_end_of_backward() {
    // One token per step: activations are negligible; at the end of backward every gradient
    // exists and the tied wte/lm_head weight's two gradient contributions (V·h each, fp32) and
    // their out-of-place sum sit beside its accumulated .grad (nanoGPT's default 40 micro-steps).
    // Plus the kept bf16 logits and the prefetched X, Y.
    let (l, a, h, v, s, b) = (1u64, 1u64, 64u64, 50304u64, 1u64, 1u64);
    let p = v * h + s * h + l * (12 * h * h + 2 * h) + h;
    let e = est(&eager(l, a, h, v, s, b));
    assert_eq!(e.train_peak_moment, TrainMoment::BackwardEnd);
    assert_eq!(e.bytes.gradients, 4 * p + 3 * 4 * v * h);
    assert_eq!(
        e.bytes.train_peak,
        16 * p + 12 * v * h + 2 * s * b * v + 2 * 8 * b * s
    );
    // One micro-step: no .grad yet (the tied weight's is the sum), the other gradients do exist.
    let one = est(&Scenario {
        gradient_accumulation_steps: 1,
        ..eager(l, a, h, v, s, b)
    });
    assert_eq!(one.train_peak_moment, TrainMoment::BackwardEnd);
    assert_eq!(one.bytes.gradients, 4 * p + 2 * 4 * v * h);
}

#[test]
fn one_micro_step_frees_gradients_before_the_forward() {
    let base = eager(6, 6, 384, 50304, 512, 16);
    let one = Scenario {
        gradient_accumulation_steps: 1,
        ..base.clone()
    };
    let p = est(&base).params.total;
    assert_eq!(
        est(&base).bytes.train_peak - est(&one).bytes.train_peak,
        4 * p
    );
    assert_eq!(est(&one).bytes.gradients, 0);
}

#[test]
fn overhead_constants() {
    let e = est(&eager(6, 6, 384, 50304, 512, 16));
    assert_eq!(e.bytes.cuda_context, 450 << 20);
    assert_eq!(e.bytes.cublas_workspace, (8 << 20) + 8 * 16 * 1024);
    assert_eq!(e.bytes.allocator_slack, e.bytes.peak * 7 / 40);
}

#[test]
fn fits_against_the_gpu() {
    let catalog = GpuCatalog::builtin();
    let mut s = Scenario {
        gpu: Some("rtx-3060-12gb".into()),
        batch_size: 64,
        ..Scenario::default()
    };
    let e = estimate(&s, &catalog).unwrap();
    let cap = catalog.get("rtx-3060-12gb").unwrap().capacity_bytes;
    assert_eq!(e.gpu.as_ref().map(|g| g.capacity_bytes), Some(cap));
    // Seed 002: micro-batch 64 at block 1024 does not fit a 12 GB card.
    assert_eq!(e.fits, Some(false));
    assert_eq!(e.headroom_bytes, Some(cap as i64 - e.bytes.total as i64));
    s.gpu = None;
    let e = estimate(&s, &catalog).unwrap();
    assert_eq!((e.fits, e.headroom_bytes, e.gpu), (None, None, None));
}
