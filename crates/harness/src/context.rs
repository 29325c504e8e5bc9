//! What a policy may know before a run ([`PolicyContext`]): the machine's
//! memory calibration (NuPoCo §4.3), the apps' stored profiles (ReSense
//! §2.2) and what earlier runs learned of their programs (solo times, rates
//! beside others; docs/knowledge.md), looked up only for the policies whose
//! registry entry reads them ([`coloc_policy::Reads`]).

use coloc_model::calibration::MemoryCalibration;
use coloc_model::profile::{find, AppProfile, AppSource, PlatformFingerprint};
use coloc_model::Workload;
use coloc_policy::{Policy, PolicyContext, Reads};
use coloc_store::Store;

use crate::data::{default_store, open_existing};
use crate::knowledge::Knowledge;
use crate::{HarnessError, Host, Target};

/// What `policies` may know before running `workload` on `target`, from the
/// profile store at its default path ([`default_store`]):
///
/// - calibration (NuPoCo §4.3), for the nupoco policies and `tranquilizer` (its
///   measured LLC capacity): on this machine the one
///   `coloc calibrate` stored for its platform fingerprint, else
///   [`MemoryCalibration::assumed`] with a warning to run `coloc calibrate`; in
///   the simulator the platform's own ([`coloc_sim::Platform::memory_calibration`]), never the
///   store's;
/// - profiles (ReSense §2.2), for `resense`, `tang` and `tranquilizer`: every stored profile of the
///   target's platform ([`coloc_store::Store::for_platform`]); on this machine
///   only those whose executable is still the one measured (see
///   `is_current`). Each app with no matching profile
///   ([`coloc_model::profile::find`]) gets a one-line warning naming the
///   `coloc profile` command that makes one; it counts as unprofiled (resense
///   scores it 0, tang spreads it, tranquilizer without counters classifies it
///   by resident set);
///   `auto` reads the same profiles without a warning: it places partitions by
///   them where stored and contiguously where not;
/// - solo times per thread count, for `auto`'s admission, and the rates its
///   apps ran at beside others: derived from the records the knowledge store
///   keeps of the programs the workload's apps run
///   ([`crate::knowledge::Knowledge`], docs/knowledge.md), none otherwise (no
///   warning: auto then admits by thread counts);
/// - region records, for the policies that set a DoP: how long its apps'
///   OpenMP regions lasted in whole earlier runs of their programs (solo
///   runs included; `coloc_model::knowledge::derive::region_records`), none
///   otherwise.
///
/// Only what the policies read is looked up, so a `native` run neither opens
/// the store nor warns, and a damaged store stops only runs that need it (with
/// the store's error naming the file). A missing store file is no error: it
/// holds nothing yet, and it is not created.
pub fn policy_context<P: AsRef<str>>(
    target: &Target,
    workload: &Workload,
    policies: &[P],
) -> Result<PolicyContext, HarnessError> {
    let reads = coloc_policy::reads_of(policies);
    let knowledge = if reads.solo || reads.regions {
        Knowledge::open_or_warn(target, workload)
    } else {
        None
    };
    policy_context_with(target, workload, policies, knowledge.as_ref())
}

/// [`policy_context`] with the knowledge store already open (None: the
/// policies go without it), for commands that add to it after each run.
pub fn policy_context_with<P: AsRef<str>>(
    target: &Target,
    workload: &Workload,
    policies: &[P],
    knowledge: Option<&Knowledge>,
) -> Result<PolicyContext, HarnessError> {
    let reads = coloc_policy::reads_of(policies);
    let needs_store = reads.profiles || (reads.calibration && matches!(target, Target::Host(_)));
    let store = if needs_store {
        open_existing(&default_store())?
    } else {
        None
    };
    let (mut ctx, warnings) = context_from(target, store.as_ref(), workload, reads)?;
    for w in warnings {
        crate::said::warning(&w);
    }
    refresh(&mut ctx, knowledge, workload, policies)?;
    Ok(ctx)
}

/// A fresh policy `name` for the node service (docs/service.md) on `host`:
/// its context is that of a workload with no app yet, since apps arrive
/// while it runs and what was learned of their programs is given to the
/// policy as they do (`coloc_daemon::Switch`).
pub fn service_policy(host: Host, name: &str) -> Result<Box<dyn Policy>, HarnessError> {
    let target = Target::Host(host);
    let workload = Workload {
        name: "daemon".into(),
        epoch: None,
        apps: Vec::new(),
    };
    let ctx = policy_context_with(&target, &workload, &[name], None)?;
    Ok(coloc_policy::build(name, &ctx)?)
}

/// Derives again what the policies read from the knowledge store (after a
/// run added to it).
pub fn refresh<P: AsRef<str>>(
    ctx: &mut PolicyContext,
    knowledge: Option<&Knowledge>,
    workload: &Workload,
    policies: &[P],
) -> Result<(), HarnessError> {
    let reads = coloc_policy::reads_of(policies);
    let Some(k) = knowledge.filter(|_| reads.solo || reads.regions) else {
        return Ok(());
    };
    let learned = k.learned(workload)?;
    if reads.solo {
        (ctx.solo, ctx.coruns) = (learned.solo, learned.coruns);
        ctx.trials = learned.trials;
    }
    if reads.regions {
        ctx.regions = learned.regions;
    }
    ctx.provenance = learned.provenance;
    Ok(())
}

/// [`policy_context`]'s choices given the store (None: no store file), with the
/// warnings to print.
fn context_from(
    target: &Target,
    store: Option<&Store>,
    workload: &Workload,
    reads: Reads,
) -> Result<(PolicyContext, Vec<String>), HarnessError> {
    let platform = PlatformFingerprint::of(target.topology());
    let mut ctx = PolicyContext::default();
    let mut warnings = Vec::new();
    if reads.calibration {
        ctx.calibration = Some(match target {
            Target::Sim { platform, .. } => platform.memory_calibration(),
            Target::Host(h) => {
                let stored = match store {
                    Some(s) => s.calibration(&platform)?,
                    None => None,
                };
                match stored.filter(|c| c.fits(&h.topology)) {
                    Some(c) => c,
                    None => {
                        let assumed = MemoryCalibration::assumed(&h.topology);
                        warnings.push(format!(
                            "no memory calibration of this machine is stored: nupoco uses {}, \
                             tranquilizer the LLC size sysfs reports; run `coloc calibrate` to \
                             measure them",
                            assumed.method
                        ));
                        assumed
                    }
                }
            }
        });
    }
    if reads.profiles {
        let mut profiles = match store {
            Some(s) => s.for_platform(&platform)?,
            None => Vec::new(),
        };
        if matches!(target, Target::Host(_)) {
            profiles.retain(is_current);
        }
        let sim = match target {
            Target::Host(_) => String::new(),
            Target::Sim { platform, .. } => format!(" --sim {}", platform.name),
        };
        for app in workload.apps.iter().filter(|_| reads.warn_unprofiled) {
            if find(&profiles, app).is_none() {
                warnings.push(format!(
                    "no profile of app \"{}\" on {}: it counts as unprofiled (resense scores \
                     it 0, tang spreads it, tranquilizer without counters classifies it by \
                     resident set); make one with `coloc profile WORKLOAD --app {}{sim}`",
                    app.name,
                    target.describe(),
                    app.name
                ));
            }
        }
        ctx.profiles = profiles;
    }
    Ok((ctx, warnings))
}

/// Whether a stored profile still describes what would run: a program's profile
/// only while the file its `argv[0]` names has the content hash it was measured
/// with ([`coloc_linux::program::program_identity`], as `coloc profile` keys
/// it). A rebuilt or replaced binary is another program (ReSense §2.2 scores
/// one program), and the policy layer cannot check hashes itself
/// ([`coloc_model::profile::AppIdentity::matches`]). Model profiles always are.
fn is_current(profile: &AppProfile) -> bool {
    match &profile.identity.source {
        AppSource::Model { .. } => true,
        AppSource::Program { command, .. } => {
            coloc_linux::program::program_identity(&profile.identity.name, command)
                .is_ok_and(|now| now == profile.identity)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use coloc_model::profile::{AppIdentity, LevelProfile, LevelResult, NotCharacterizable};
    use coloc_model::testutils::app_spec;
    use coloc_model::topology::ResourceKind;
    use coloc_model::Topology;

    use super::*;

    fn sim(name: &str) -> Target {
        Target::Sim {
            platform: coloc_sim::platform(name).unwrap(),
            seed: 1,
        }
    }

    fn host() -> Target {
        Target::Host(Host {
            topology: Topology::synthetic("host", "package:1 l3(8M):1 core:2").unwrap(),
            process_events: true,
            // No run is made: the context's choices need the topology only.
            journal_dir: "/nonexistent".into(),
        })
    }

    /// The service's policy is made with no app known yet; a name that is
    /// no policy is the registry's error.
    #[test]
    fn the_services_policy_is_made_before_any_app_arrives() {
        let Target::Host(h) = host() else {
            unreachable!()
        };
        assert_eq!(service_policy(h, "native").unwrap().name(), "native");
        let Target::Host(h) = host() else {
            unreachable!()
        };
        let e = service_policy(h, "nope").err().unwrap();
        assert!(matches!(e, HarnessError::Policy(_)), "{e:?}");
        assert!(e.to_string().contains("unknown policy `nope`"), "{e}");
    }

    /// A model app, as simulated workloads have them.
    fn model_app(name: &str) -> coloc_model::AppSpec {
        coloc_model::AppSpec::model(name, name, 2)
    }

    fn workload(apps: Vec<coloc_model::AppSpec>) -> Workload {
        Workload {
            name: "w".into(),
            epoch: None,
            apps,
        }
    }

    /// A profile of `identity` on `target`'s platform (one uncharacterizable
    /// level: enough to be found).
    fn profile(identity: AppIdentity, target: &Target) -> AppProfile {
        AppProfile {
            sharing: None,
            identity,
            platform: PlatformFingerprint::of(target.topology()),
            levels: vec![LevelProfile {
                level: ResourceKind::Cache { level: 3 },
                result: LevelResult::NotCharacterizable {
                    reason: NotCharacterizable::SingleInstance,
                },
            }],
        }
    }

    /// Where the calibration comes from, per target and store content, and
    /// whether the user is told to calibrate.
    #[test]
    fn calibration_choice() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("p.db")).unwrap();
        let empty = Store::open(dir.path().join("empty.db")).unwrap();
        let h = host();
        let measured = MemoryCalibration {
            method: "measured".into(),
            ..MemoryCalibration::uniform(h.topology(), 20e9, 1e9, 64, String::new())
        };
        store
            .put_calibration(&PlatformFingerprint::of(h.topology()), &measured)
            .unwrap();
        let kvm = sim("kvm-2cpu");
        let Target::Sim { platform, .. } = &kvm else {
            unreachable!()
        };
        let own = platform.memory_calibration();
        let reads = Reads::CALIBRATION;
        let cases: [(&Target, Option<&Store>, &str, bool); 5] = [
            (&h, Some(&store), "measured", false),
            (&h, Some(&empty), "assumed", true),
            (&h, None, "assumed", true),
            // The simulator never reads the store.
            (&kvm, Some(&store), &own.method, false),
            (&kvm, None, &own.method, false),
        ];
        for (i, (target, store, method, warned)) in cases.into_iter().enumerate() {
            let (ctx, warnings) = context_from(target, store, &workload(vec![]), reads).unwrap();
            let got = ctx.calibration.unwrap();
            assert!(got.method.starts_with(method), "case {i}: {}", got.method);
            assert!(got.fits(target.topology()), "case {i}");
            assert_eq!(
                warnings.len(),
                usize::from(warned),
                "case {i}: {warnings:?}"
            );
            if warned {
                assert!(
                    warnings[0].contains("run `coloc calibrate`"),
                    "{warnings:?}"
                );
            }
        }
        // Nothing read, nothing looked up.
        let (ctx, warnings) =
            context_from(&h, Some(&store), &workload(vec![]), Reads::NOTHING).unwrap();
        assert!(ctx.calibration.is_none() && ctx.profiles.is_empty() && warnings.is_empty());
    }

    /// Profiles of the platform are handed over; apps without one are named in
    /// a warning with the command that makes their profile.
    #[test]
    fn profiles_and_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("p.db")).unwrap();
        let kvm = sim("kvm-2cpu");
        store
            .put(&profile(AppIdentity::model("cg", "cg"), &kvm))
            .unwrap();
        // Another platform's profile of the other app is not handed over.
        store
            .put(&profile(AppIdentity::model("mg", "mg"), &sim("yorkfield")))
            .unwrap();
        let w = workload(vec![model_app("cg"), model_app("mg")]);
        let reads = Reads::PROFILES;
        let (ctx, warnings) = context_from(&kvm, Some(&store), &w, reads).unwrap();
        assert_eq!(ctx.profiles.len(), 1);
        assert_eq!(ctx.profiles[0].identity.name, "cg");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("\"mg\"")
                && warnings[0].contains("`coloc profile WORKLOAD --app mg --sim kvm-2cpu`"),
            "{}",
            warnings[0]
        );
        // No store: every app is named.
        let (ctx, warnings) = context_from(&kvm, None, &w, reads).unwrap();
        assert!(ctx.profiles.is_empty());
        assert_eq!(warnings.len(), 2);
        // auto reads them where stored and names no app without one.
        let auto = coloc_policy::reads_of(&["auto"]);
        let (ctx, warnings) = context_from(&kvm, Some(&store), &w, auto).unwrap();
        assert_eq!((ctx.profiles.len(), warnings.len()), (1, 0), "{warnings:?}");
    }

    /// On this machine a program's profile is handed over only while its
    /// executable is unchanged.
    #[test]
    fn a_rebuilt_program_loses_its_profile() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("app");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let argv = vec![exe.display().to_string()];
        let identity = coloc_linux::program::program_identity("app", &argv).unwrap();
        let h = host();
        let store = Store::open(dir.path().join("p.db")).unwrap();
        store.put(&profile(identity, &h)).unwrap();
        let w = workload(vec![coloc_model::AppSpec {
            command: Some(argv),
            ..app_spec("app", 2)
        }]);
        let reads = Reads::PROFILES;
        let (ctx, warnings) = context_from(&h, Some(&store), &w, reads).unwrap();
        assert_eq!((ctx.profiles.len(), warnings.len()), (1, 0), "{warnings:?}");
        std::fs::write(&exe, "#!/bin/sh\nexit 0\n").unwrap();
        let (ctx, warnings) = context_from(&h, Some(&store), &w, reads).unwrap();
        assert!(ctx.profiles.is_empty());
        assert!(
            warnings[0].contains("`coloc profile WORKLOAD --app app`"),
            "{warnings:?}"
        );
    }
}
