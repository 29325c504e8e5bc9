//! A memory/scheduling layer on top of a placement policy
//! (docs/policies/tranquilizer.md, Composing): `nupoco+tranquilizer`.
//!
//! Problem: Thread Tranquilizer sets memory placement and scheduling, never
//! where threads run or how many there are (§3), so it belongs on top of any
//! placement policy rather than in place of one.
//!
//! Approach: both policies decide on the same view; [`combine`] takes
//! admission, placement and DoP from the base, memory policy and scheduling
//! from the layer wherever the layer sets them (the base's elsewhere). A name
//! `BASE+LAYER` builds it; only policies in [`LAYERS`] may be a layer, and a
//! layer cannot be a base. `BASE+guard` is built here too, but it merges no
//! plans: it checks its base against Linux ([`crate::guard`]).

use std::sync::{Mutex, PoisonError};

use coloc_model::{MemPolicy, Plan, View};

use crate::guard::{Guarded, GUARD};
use crate::registry::{by_name_with, UnknownPolicy};
use crate::{Policy, PolicyContext};

/// Policies that set only memory and scheduling, and so may be layered; and
/// `guard`, which checks its base against Linux ([`crate::guard`]).
pub const LAYERS: &[&str] = &["tranquilizer", GUARD];

/// The combining rule: per app of `base`, admission, placement and DoP from
/// `base`; memory policy and each scheduling field from `layer` where it sets
/// them, else from `base`. Apps only the layer names are dropped (the base
/// decides which apps exist). Reasons and verdicts are the base's followed by
/// the layer's.
pub fn combine(base: Plan, layer: &Plan) -> Plan {
    let apps = base
        .apps
        .into_iter()
        .map(|mut p| {
            if let Some(l) = layer.for_app(p.app) {
                if l.memory != MemPolicy::Default {
                    p.memory = l.memory;
                }
                p.sched.nice = l.sched.nice.or(p.sched.nice);
                p.sched.slice_us = l.sched.slice_us.or(p.sched.slice_us);
                p.reasons.extend(l.reasons.iter().cloned());
            }
            p
        })
        .collect();
    let mut reasons = base.reasons;
    reasons.extend(layer.reasons.iter().cloned());
    let mut verdicts = base.verdicts;
    verdicts.extend(layer.verdicts.iter().cloned());
    Plan {
        apps,
        reasons,
        verdicts,
        legacy_note: None,
    }
}

/// A base policy with a layer on top.
#[derive(Debug)]
pub struct Layered {
    name: &'static str,
    base: Box<dyn Policy>,
    layer: Box<dyn Policy>,
}

impl Layered {
    pub fn new(base: Box<dyn Policy>, layer: Box<dyn Policy>) -> Self {
        Self {
            name: intern(format!("{}+{}", base.name(), layer.name())),
            base,
            layer,
        }
    }
}

impl Policy for Layered {
    fn name(&self) -> &'static str {
        self.name
    }

    fn learned(&mut self, learned: &coloc_model::knowledge::derive::Learned) {
        self.base.learned(learned);
        self.layer.learned(learned);
    }

    fn decide(&mut self, view: &View<'_>) -> Plan {
        let base = self.base.decide(view);
        let layer = self.layer.decide(view);
        combine(base, &layer)
    }
}

/// `BASE+LAYER` names a combination of the registry's policies only one way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayerError {
    #[error(transparent)]
    Unknown(#[from] UnknownPolicy),
    #[error(
        "policy `{name}`: `{layer}` cannot be a layer, it decides placement (layers: {layers}); write PLACEMENT+LAYER, e.g. `nupoco+tranquilizer`",
        layers = LAYERS.join(", ")
    )]
    NotALayer { name: String, layer: String },
    #[error("policy `{name}`: `{base}` is a layer, it goes after the `+` (e.g. `nupoco+{base}`)")]
    LayerAsBase { name: String, base: String },
    #[error(
        "policy `{name}`: one `+` joins a placement policy and a layer, e.g. `nupoco+tranquilizer`"
    )]
    Shape { name: String },
}

/// Splits `BASE+LAYER`; None for a plain name. Checks the shape and the
/// roles, not that the base exists.
pub fn split(name: &str) -> Result<Option<(&str, &str)>, LayerError> {
    let Some((base, layer)) = name.split_once('+') else {
        return Ok(None);
    };
    if base.is_empty() || layer.is_empty() || layer.contains('+') {
        return Err(LayerError::Shape { name: name.into() });
    }
    if LAYERS.contains(&base) {
        return Err(LayerError::LayerAsBase {
            name: name.into(),
            base: base.into(),
        });
    }
    if !LAYERS.contains(&layer) {
        return Err(LayerError::NotALayer {
            name: name.into(),
            layer: layer.into(),
        });
    }
    Ok(Some((base, layer)))
}

/// Builds a registry policy, a `BASE+LAYER` combination of two, or a
/// `BASE+guard` (the base checked against Linux, [`crate::guard`]).
pub fn build(name: &str, ctx: &PolicyContext) -> Result<Box<dyn Policy>, LayerError> {
    Ok(match split(name)? {
        None => by_name_with(name, ctx)?,
        Some((base, GUARD)) => {
            Box::new(Guarded::new(by_name_with(base, ctx)?, intern(name.into())))
        }
        Some((base, layer)) => Box::new(Layered::new(
            by_name_with(base, ctx)?,
            by_name_with(layer, ctx)?,
        )),
    })
}

/// A `'static` copy of a combination's name, made once per distinct name
/// (there are at most policies × layers of them).
fn intern(name: String) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let n: &'static str = Box::leak(name.into_boxed_str());
    names.push(n);
    n
}
