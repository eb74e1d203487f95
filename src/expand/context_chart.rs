//! `{{ chart("context") }}`: a generate run's memory against its context length (the prompt
//! grows, `max_new_tokens` stays, as the solver grows it), each point the estimate of that
//! `generate` call, its peak split into what is alive there, stacked:
//! - the weights (`bytes.weights`);
//! - the KV cache at the peak's moment (`bytes.kv_cache_after_prefill` when the prefill peaks,
//!   `bytes.kv_cache_at_end` when the last decoding step does);
//! - the peak step's own tensors: the rest of `bytes.peak` (the prefill's activations and the
//!   first token's logits, or the last step's logits and the cache's concatenation);
//! - what lies outside PyTorch's allocator (`bytes.overhead`), so the top is `bytes.total`, what
//!   the verdict compares with the card.
//!
//! The card's capacity (less other programs) is the dashed line; the solver's longest context
//! (`solve.max_context`) the vertical one, labelled as the model's own limit when its positions
//! bind before the card.

use fluent_bundle::FluentValue;

use super::charts::{capacity, Drawn};
use super::generate_data::GenerateRun;
use super::ExpandContext;
use crate::chart::{self, Layout, StackedChart, StackedPoint};
use crate::estimate::{self, GenerateEstimate, GenerateMoment, Generation};

/// About this many points across the x axis.
const POINTS: u64 = 32;

/// The chart of `run` (the guide's, or variant `variant`'s), in both layouts.
pub(super) fn chart(
    run: &GenerateRun,
    variant: Option<&str>,
    ctx: &ExpandContext<'_>,
) -> Result<Drawn, String> {
    let loc = ctx.loc;
    let g = run.generation();
    let fit = run.max_context.and_then(|s| s.value);
    let points: Vec<StackedPoint> = context_xs(g, run.estimate.context_tokens, fit)
        .into_iter()
        .filter_map(|x| at(run, g, x, ctx).map(|e| point(x, &e)))
        .collect();
    let est = &run.estimate;
    let gpu = est.gpu.as_ref().map_or("", |c| c.name.as_str());
    let title = loc.t_args(
        "chart-context-title",
        &[
            (
                "model",
                FluentValue::from(est.architecture.name.to_string()),
            ),
            ("gpu", FluentValue::from(gpu)),
        ],
    );
    let fmt = |x: f64| loc.decimal(x, if x.fract() == 0.0 { 0 } else { 1 });
    let format_x = |x: u64| loc.int(x);
    // The line is the model's own limit when its positions, not the card, bound the context.
    let by_positions = run
        .max_context
        .is_some_and(|s| s.limited_by == estimate::Limit::Positions);
    let (label_key, caption_key) = if by_positions {
        ("chart-context-positions", "chart-caption-context-positions")
    } else {
        ("chart-context-fit", "chart-caption-context")
    };
    let fit_label = fit.map(|x| {
        let value = FluentValue::from(loc.int(x));
        (loc.t_args(label_key, &[("value", value)]), x)
    });
    let chart = StackedChart {
        title: title.clone(),
        x_label: loc.t("chart-x-context"),
        y_label: loc.t("chart-y-memory"),
        layers: [
            "chart-layer-weights",
            "chart-layer-kv",
            "chart-layer-step",
            "chart-layer-overhead",
        ]
        .map(|k| loc.t(k))
        .to_vec(),
        points,
        capacity: capacity(est.gpu.as_ref(), est.bytes.other_processes, loc),
        max_fit: fit_label,
        format_gib: &fmt,
        format_x: &format_x,
    };
    let svg = |layout| chart::stacked_svg_in(&chart, layout).map_err(|e| format!("chart: {e}"));
    let new = FluentValue::from(loc.int(g.max_new_tokens));
    let caption = match (est.gpu.is_some(), fit) {
        (true, Some(x)) => loc.t_args(
            caption_key,
            &[("new", new), ("value", FluentValue::from(loc.int(x)))],
        ),
        _ => loc.t_args("chart-caption-context-none", &[("new", new)]),
    };
    let file = match variant {
        Some(id) => format!("context-{id}.svg"),
        None => "context.svg".to_owned(),
    };
    Ok(Drawn {
        file,
        wide: svg(Layout::Wide)?,
        narrow: svg(Layout::Narrow)?,
        alt: loc.t_args("chart-context-alt", &[("title", FluentValue::from(title))]),
        caption,
    })
}

/// The estimate of `run` at context `x` (prompt `x − max_new_tokens`); `None` past the model's
/// positions.
fn at(
    run: &GenerateRun,
    g: &Generation,
    x: u64,
    ctx: &ExpandContext<'_>,
) -> Option<GenerateEstimate> {
    let prompt = x.checked_sub(g.max_new_tokens).filter(|p| *p >= 1)?;
    let g = Generation {
        prompt_tokens: prompt,
        ..*g
    };
    estimate::estimate_generate(run.model(), &run.scenario, &g, ctx.catalog).ok()
}

/// A point's layers: weights, the cache at the peak's moment, the rest of the peak, the overhead.
fn point(x: u64, e: &GenerateEstimate) -> StackedPoint {
    let b = &e.bytes;
    let cache = match e.peak_moment {
        GenerateMoment::Prefill => b.kv_cache_after_prefill,
        GenerateMoment::Decode => b.kv_cache_at_end,
        // nanochat's load holds no cache: its excess over the weights is the load's own.
        GenerateMoment::Load => 0,
    };
    let step = b.peak.saturating_sub(b.weights).saturating_sub(cache);
    StackedPoint {
        x,
        layers: vec![b.weights, cache, step, b.total.saturating_sub(b.peak)],
    }
}

/// The contexts drawn: from a one-token prompt to 1.5 × the longest that fits (or the run's own
/// context, if larger), evenly spaced, with the run's context and the longest that fits among
/// them.
fn context_xs(g: &Generation, current: u64, fit: Option<u64>) -> Vec<u64> {
    let first = g.max_new_tokens + 1;
    let end = fit
        .map_or(current * 2, |f| f + f / 2)
        .max(current)
        .max(first + POINTS);
    let step = (end - first).div_ceil(POINTS).max(1);
    let mut xs: Vec<u64> = (0..=POINTS).map(|i| first + i * step).collect();
    xs.push(current);
    xs.extend(fit);
    xs.sort_unstable();
    xs.dedup();
    xs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::kv_cache::CacheKind;

    #[test]
    fn contexts_start_at_a_one_token_prompt_and_hold_the_marked_ones() {
        let g = Generation {
            prompt_tokens: 512,
            max_new_tokens: 500,
            batch_size: 1,
            num_return_sequences: 1,
            do_sample: false,
            num_beams: 1,
            cache: CacheKind::Dynamic,
        };
        let xs = context_xs(&g, 1012, Some(13_390));
        assert_eq!(xs.first(), Some(&501));
        assert!(xs.contains(&1012) && xs.contains(&13_390), "{xs:?}");
        assert!(xs.windows(2).all(|w| w[0] < w[1]));
        assert!(*xs.last().expect("points") >= 13_390 + 13_390 / 2);
        // Nothing fits: twice the run's own context.
        assert!(context_xs(&g, 1012, None)
            .last()
            .is_some_and(|x| *x >= 2024));
    }
}
