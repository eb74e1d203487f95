//! The moments of a training run (the step, the two evaluations, the checkpoint load) with what
//! the run's set-up keeps beside them and the DDP sharding applied, and the `bytes` object built
//! from them.

use super::memory::{self, TrainMoment};
use super::num::N;
use super::{overhead, params, sharding, Bytes, PeakPhase, Scenario, ScenarioError, Sharding};

/// The memory of the training step and of the two evaluations, with what the run's set-up
/// keeps beside them.
pub(super) struct Moments {
    /// The training step's peak, by component (an eval-only run: what it holds beside the
    /// evaluation).
    pub(super) train: memory::Components,
    /// When in the step it occurs.
    pub(super) train_moment: TrainMoment,
    /// `estimate_loss()` once optimizer state exists.
    pub(super) eval: N,
    /// `estimate_loss()` at iteration 0.
    pub(super) eval_first: N,
}

impl Moments {
    /// The memory model's moments plus what the set-up keeps beside every moment
    /// (`memory::setup`): the resumed checkpoint's weights and DDP's buckets; the first
    /// evaluation of a resumed run also holds the loaded optimizer state.
    pub(super) fn with_setup(run: &Scenario, m: &memory::Memory, setup: &memory::Setup) -> Moments {
        let beside = setup.retained + setup.ddp_buckets;
        let eval_first = m.eval_first + beside + setup.loaded_optimizer;
        if run.eval_only {
            let held = memory::Components {
                weights: m.train.weights + setup.retained,
                gradients: setup.ddp_buckets,
                ..memory::Components::default()
            };
            Moments {
                train: held,
                train_moment: TrainMoment::NoTraining,
                eval: eval_first,
                eval_first,
            }
        } else {
            let mut train = m.train;
            train.weights = train.weights + setup.retained;
            train.gradients = train.gradients + setup.ddp_buckets;
            Moments {
                train,
                train_moment: m.train_moment,
                eval: m.eval + beside,
                eval_first,
            }
        }
    }

    /// The moments once the training state is sharded among the DDP processes
    /// (`sharding::sharded`): FSDP replaces DDP's buckets, and its root unit holds the tied
    /// weight's gradient whole during the backward. An eval-only run holds no gradients or
    /// optimizer state to split.
    pub(super) fn sharded(
        mut self,
        process: &Scenario,
        counted: &params::CountedParams,
        m: &memory::Memory,
        setup: &memory::Setup,
    ) -> Moments {
        let (grads, optimizer) = if process.eval_only {
            (N::ZERO, N::ZERO)
        } else {
            (m.train.gradients, m.train.optimizer)
        };
        let shard = sharding::sharded(process, counted, self.train_moment, grads, optimizer);
        if process.sharding == Sharding::None {
            return self;
        }
        let no_buckets = if process.sharding == Sharding::Full {
            setup.ddp_buckets
        } else {
            N::ZERO
        };
        let train = &mut self.train;
        train.weights = train.weights + shard.gathered - shard.freed_weights;
        train.gradients =
            train.gradients - shard.freed_gradients - no_buckets + shard.root_gradient;
        train.optimizer = train.optimizer - shard.freed_optimizer;
        // Evaluations hold the weights (and, after the first step, the optimizer state).
        let evals =
            |e: N, optimizer: N| e + shard.gathered - shard.freed_weights - optimizer - no_buckets;
        let optimizer_freed = if process.eval_only {
            N::ZERO
        } else {
            shard.freed_optimizer
        };
        self.eval = evals(self.eval, optimizer_freed);
        self.eval_first = evals(self.eval_first, N::ZERO);
        self
    }

    /// The largest of the training step (not for an eval-only run), the evaluations and the
    /// checkpoint load, and its phase; the earliest wins a tie.
    pub(super) fn peak(&self, setup: &memory::Setup, eval_only: bool) -> (N, PeakPhase) {
        let candidates = [
            (self.train.sum(), PeakPhase::Train),
            (self.eval, PeakPhase::Eval),
            (self.eval_first, PeakPhase::Eval),
            (setup.load_peak, PeakPhase::Load),
        ];
        candidates.into_iter().skip(usize::from(eval_only)).fold(
            (N::ZERO, PeakPhase::Train),
            |best, c| if c.0 > best.0 { c } else { best },
        )
    }
}

/// The `bytes` object: the moments' figures and the overhead at its middle and both ends, each
/// checked to fit a u64 (the first that does not is the error).
pub(super) fn bytes(
    s: &Scenario,
    m: &memory::Memory,
    setup: &memory::Setup,
    moments: &Moments,
    peak: N,
) -> Result<Bytes, ScenarioError> {
    let train = &moments.train;
    let t = overhead::totals(peak, s.compile)?;
    let u = |n: N, what: &str| n.to_u64(what);
    Ok(Bytes {
        weights: u(train.weights, "the weights")?,
        gradients: u(train.gradients, "the gradients")?,
        optimizer: u(train.optimizer, "the optimizer state")?,
        autocast_weights: u(train.autocast_weights, "the autocast weight copies")?,
        activations: u(train.activations, "the activations")?,
        logits: u(train.logits, "the logits")?,
        train_peak: u(train.sum(), "the training peak")?,
        eval_peak: u(moments.eval, "the evaluation peak")?,
        eval_first_peak: u(moments.eval_first, "the evaluation peak")?,
        peak: u(peak, "the peak")?,
        resume_load_peak: u(setup.load_peak, "the checkpoint load")?,
        resume_retained: u(setup.retained, "the retained checkpoint")?,
        ddp_buckets: if s.sharding == Sharding::Full {
            0
        } else {
            u(setup.ddp_buckets, "the DDP buckets")?
        },
        overhead: t.overhead,
        total: t.total,
        total_low: t.total_low,
        total_high: t.total_high,
        other_processes: s.other_processes,
        first_step_peak: None,
        logits_tensor: u(m.logits_tensor, "the logits tensor")?,
        eval_logits_tensor: u(m.eval_logits_tensor, "the eval logits tensor")?,
        cuda_context: t.cuda_context,
        allocator_slack: t.allocator_slack,
        cublas_workspace: t.cublas_workspace,
    })
}
