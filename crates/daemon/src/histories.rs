//! What applied to each app the daemon manages, for `coloc why APP` against
//! the daemon (docs/service.md, coloc why): the history a run's trace gives
//! (`coloc_model::explain::history`), kept as the loop records its events.
//!
//! Bounded: an app keeps its last [`MAX_STRETCHES`] stretches (a new
//! decision starts one), and the last [`MAX_ENDED`] apps that left are kept
//! after they leave, so `coloc why` can still tell what happened to an app
//! that just ended.

use std::collections::{BTreeMap, VecDeque};

use coloc_model::explain::history::History;
use coloc_model::{AppId, TraceEvent};

/// Stretches kept per app.
pub const MAX_STRETCHES: usize = 64;

/// Apps kept after they left.
pub const MAX_ENDED: usize = 64;

/// One app's history and whose app it is.
#[derive(Debug, Clone)]
pub struct Kept {
    pub name: String,
    /// Its user (None when the daemon no longer knew it at its arrival).
    pub uid: Option<u32>,
    pub history: History,
}

/// The histories of the apps running and of those that left last.
#[derive(Debug, Default)]
pub struct Histories {
    running: BTreeMap<AppId, Kept>,
    ended: VecDeque<Kept>,
}

impl Histories {
    /// Folds one event of the loop into the histories it concerns;
    /// `uid_of` tells an arriving app's user.
    pub fn record(&mut self, event: &TraceEvent, uid_of: impl Fn(u32) -> Option<u32>) {
        if let TraceEvent::Arrive { app, name, .. } = event {
            self.running.insert(
                *app,
                Kept {
                    name: name.clone().unwrap_or_default(),
                    uid: uid_of(app.app),
                    history: History::new(*app),
                },
            );
        }
        for k in self.running.values_mut() {
            k.history.observe(event);
            k.history.keep_last(MAX_STRETCHES);
        }
        if let TraceEvent::Exit { app, .. } = event {
            if let Some(k) = self.running.remove(app) {
                if self.ended.len() == MAX_ENDED {
                    self.ended.pop_front();
                }
                self.ended.push_back(k);
            }
        }
    }

    /// The histories of the apps `pick` accepts, those running first.
    pub fn find(&self, pick: impl Fn(&Kept) -> bool) -> Vec<Kept> {
        self.running
            .values()
            .chain(self.ended.iter().rev())
            .filter(|k| pick(k))
            .cloned()
            .collect()
    }
}
