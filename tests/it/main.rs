//! vramdoc's integration tests, one binary (as ripgrep and mdBook do): one link instead of
//! fifteen. Each module tests one part through the library or the real `vramdoc` binary.
#![allow(dead_code, unreachable_pub)]

mod support;

mod calibration;
mod catalog_cards;
mod catalog_sources;
mod chart;
mod chart_pages;
mod check;
mod computed_guides;
mod ddp_options;
mod diagnose;
mod diagnose_checks;
mod diagnose_explained;
mod diagnose_formats;
mod estimate_cli;
mod estimate_memory;
mod estimate_params;
mod estimate_props;
mod estimate_pyconfig;
mod estimate_scenario;
mod finetune;
mod fingerprint;
mod gpu_measured;
mod hardening;
mod hardening_site;
mod hf_gpt2;
mod hf_validation;
mod hostile_cli;
mod hostile_input;
mod hostile_pickles;
mod hugging_face;
mod incremental;
mod layering;
mod locales;
mod markdown;
mod model_cli;
mod nanogpt_configs;
mod nanogpt_runs;
mod parser_props;
mod phase;
mod pyconfig_limits;
mod refusals;
mod rows;
mod sampling;
mod scenario_keys;
mod search;
#[cfg(feature = "serve")]
mod serve;
mod short_answer;
mod site;
mod translations;
mod validation;
mod verdict;
mod words;
