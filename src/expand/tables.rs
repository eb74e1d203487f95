//! The Markdown tables a guide can embed: memory breakdown, parameter counts, options. This picks
//! the estimate a call names (the guide's or a variant's); `present::guide_tables` writes them.

use super::data::{GuideData, TrainData};
use super::ExpandContext;
use crate::present::{guide_tables, NamedVariant};

/// The memory components of the scenario (or of a variant), against the GPU.
pub(super) fn breakdown(
    data: &GuideData,
    ctx: &ExpandContext<'_>,
    variant: Option<&str>,
) -> Result<String, String> {
    let data = data.train("breakdown_table()")?;
    let est = match variant {
        None => &data.estimate,
        Some(id) => data.variant(id)?,
    };
    Ok(guide_tables::breakdown(est, ctx.loc))
}

/// Parameter counts as nanoGPT reports them.
pub(super) fn params(data: &GuideData, ctx: &ExpandContext<'_>) -> Result<String, String> {
    let data = data.train("params_table()")?;
    Ok(guide_tables::params(&data.estimate.params, ctx.loc))
}

/// The front matter's variants, then the computed what-ifs, one row per distinct change. For a
/// `variant`: that variant's own what-ifs, against it (the other variants are changes of the
/// guide's scenario, not of it).
pub(super) fn options(
    data: &GuideData,
    ctx: &ExpandContext<'_>,
    variant: Option<&str>,
) -> Result<String, String> {
    let data = data.train("options_table()")?;
    let (base, what_if, variants) = match variant {
        Some(id) => {
            let v = data.variant_data(id)?;
            (&v.estimate, &v.what_if, Vec::new())
        }
        None => (&data.estimate, &data.what_if, same_card_variants(data, ctx)),
    };
    Ok(guide_tables::options(base, &variants, what_if, ctx.loc))
}

/// The guide's variants that run on its own card, labelled in the page's language: the options
/// table lists them before the what-ifs. A variant on another card is no option for this one (its
/// verdict is against its own card): `options_table(variant="id")` shows its options.
pub(super) fn same_card_variants<'d>(
    data: &'d TrainData,
    ctx: &'d ExpandContext<'_>,
) -> Vec<NamedVariant<'d>> {
    data.variants
        .iter()
        .filter(|v| v.estimate.scenario.gpu == data.estimate.scenario.gpu)
        .map(|v| NamedVariant {
            label: ctx
                .variant_labels
                .iter()
                .find(|(id, _)| *id == v.id)
                .map_or(v.id.as_str(), |(_, l)| l.as_str()),
            estimate: &v.estimate,
        })
        .collect()
}
