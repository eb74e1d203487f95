//! `estimate_loss()`'s peak: a forward under `no_grad` at the eval micro-batch.

use super::finetune::Training;
use super::memory::{embedding_locals, tokens, weights, MicroBatchShapes, Precision, Totals};
use super::num::N;
use super::scenario::Scenario;
use super::train::loss_forward_logits;

/// `estimate_loss()`'s peak, with `optimizer` bytes of optimizer state (zero at iteration 0).
///
/// No activations are saved; what is alive is the weights, optimizer state, X and Y, the
/// forward's locals `tok_emb`/`pos_emb` (see [`embedding_locals`]), the previous batch's
/// `logits` (still bound in the loop), autocast's cached weight copies so far (trainable weights
/// only: `memory::cached_copies`; with frozen embeddings or LoRA the frozen copies live only
/// through their matmul, and a frozen lm_head's copy beside the new logits is one more moment),
/// and the largest of three moments:
/// - the loss: `ln_f`'s output (`r·sbh`) and [`loss_forward_logits`] per s·b·V element, with
///   every weight copy cached;
/// - the last block's MLP: the block input held by the caller, the residual after attention and
///   `ln_2`'s output held as the call's argument (`3r`), c_fc's output and GELU's (`8c`);
///   lm_head's and the block's c_proj copies not cast yet (`2·(V·h + 4h²)`);
/// - flash off, the last block's manual attention: the block input and `ln_1`'s output (`2r`),
///   q/k/v (`3c`) and the scores at their largest: at the softmax, 10 bytes per a·s²·b element
///   under bf16 autocast (masked scores, their fp32 copy, the softmax), 6 under fp16 autocast
///   (the softmax of a half input writes fp32 directly), 8 in fp32, 4 pure bf16; or at
///   `att @ v`, the softmax and its 16-bit copy plus v's contiguous copy and the output
///   (`2c·sbh`). Copies of lm_head, the block's attention projection and MLP are not cast yet
///   (`2·(V·h + 9h²)`).
pub(crate) fn eval_peak(s: &Scenario, x: Precision, t: &Totals, optimizer: N) -> N {
    let b = s.eval_batch();
    let d = MicroBatchShapes::at(s, b);
    let fixed = weights(s, x, t.params) + optimizer + tokens(s, b, 2) + embedding_locals(s, x, b);
    // Autocast caches the copies of trainable weights only (`memory::cached_copies`); a frozen
    // weight's copy lives while its matmul runs.
    let copies = if x.autocast {
        t.cached_copies * 2
    } else {
        N::ZERO
    };
    let train = Training::of(s);
    let (v, h) = (N::from(s.vocab_size), N::from(s.n_embd));
    let uncast = |sq: u128| {
        if !x.autocast {
            return N::ZERO;
        }
        let head = if train.embeddings { v * h } else { N::ZERO };
        let block = if train.base { h * h * sq } else { N::ZERO };
        (head + block) * 2
    };
    let loss = copies + d.sbh * x.r + d.sbv * loss_forward_logits(s, x);
    let prev_logits = d.sbv * x.c;
    let mlp = copies - uncast(4) + d.sbh * (3 * x.r + 8 * x.c) + prev_logits;
    let mut worst = loss.max(mlp);
    if x.autocast && !train.embeddings {
        // A frozen lm_head's copy is cast for its matmul only: ln_f's output, its 16-bit cast,
        // the copy and the new logits beside the previous ones (small batches, short blocks).
        let head = copies + d.sbh * (x.r + x.c) + v * h * 2 + d.sbv * (2 * x.c);
        worst = worst.max(head);
    }
    if !s.flash {
        // At the softmax (masked scores, fp32 copy, output) and at `att @ v` (the softmax, its
        // 16-bit copy, the contiguous copy of v and the output y: `2c·sbh`).
        let (softmax, att_v) = match (x.autocast, x.fp16, x.c) {
            (true, false, _) => (10, 6),
            (true, true, _) => (6, 6),
            (false, _, 4) => (8, 4),
            _ => (4, 2),
        };
        let scores = (d.scores * softmax).max(d.scores * att_v + d.sbh * (2 * x.c));
        let attention = copies - uncast(9) + d.sbh * (2 * x.r + 3 * x.c) + scores + prev_logits;
        worst = worst.max(attention);
    }
    fixed + worst
}
