//! The entry point the fuzz targets (`tests/fuzz`) need beyond the public API: `vramdoc
//! estimate` with every error it finds, as the command line prints them. The readers it reaches
//! (the Python config evaluator, the YAML scenario reader, `meta.pkl` and checkpoint pickles)
//! stay crate-private; this is not an API, hence hidden from the documentation.

use crate::cli::args::ScenarioArgs;
use crate::cli::estimate::{self, EstimateArgs};

/// Runs `vramdoc estimate FILE --set SET...` in a fresh folder, which is also `--data-dir`:
/// `scenario` is `(FILE's name, its bytes)` (the extension decides YAML or Python), and each of
/// `files` is written at its relative path (`data/<dataset>/meta.pkl`, `<out_dir>/ckpt.pt`).
/// Returns the report, or the rendered errors as `vramdoc estimate` prints them (the first
/// [`crate::diagnostics::MAX_PRINTED`] and a count); `Err` also when the folder cannot be made.
pub fn estimate(
    scenario: (&str, &[u8]),
    files: &[(&str, &[u8])],
    sets: &[String],
) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a scratch folder: {e}"))?;
    let write = |name: &str, bytes: &[u8]| -> Result<String, String> {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path.to_string_lossy().into_owned())
    };
    let file = write(scenario.0, scenario.1)?;
    for (name, bytes) in files {
        write(name, bytes)?;
    }
    let args = EstimateArgs {
        inputs: vec![file],
        scenario: ScenarioArgs {
            set: sets.to_vec(),
            data_dir: Some(dir.path().to_path_buf()),
            ..ScenarioArgs::default()
        },
        ..EstimateArgs::default()
    };
    estimate::report_with_notes(&args)
        .map(|(text, notes)| notes.join("\n") + &text)
        .map_err(|diags| crate::diagnostics::render_capped(&diags).join("\n"))
}
