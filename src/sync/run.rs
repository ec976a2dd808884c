//! One `walj sync` from start to end (docs/sync.md, "Transport"):
//!
//! 1. resolve the remote (nothing is created before this succeeds);
//! 2. the first time for a remote without encryption: say what will be published, ask (or
//!    refuse in one line when nobody can be asked);
//! 3. lock `.walj/sync/lock` (one sync at a time per checkout);
//! 4. fetch every journal's ref into walj's repository;
//! 5. check this journal's ref on the remote against what this checkout last pushed;
//! 6. build the commit from the journal as it is now;
//! 7. push it with a lease (`refs/walj/pending/<id>` first, so a sync killed after the remote
//!    took the push recognises it next time; `refs/walj/journals/<id>` after git says yes);
//! 8. check and materialise the other journals.
//!
//! `dry_run` (and `--status`) stop before anything is pushed or materialised.

use std::collections::HashMap;
use std::io::Write as _;

use serde::Serialize;

use super::accept::{Seen, accept_all};
use super::manifest::SessionState;
use super::publish::{Input, build};
use super::seal::{Opener, Seal, Wanted};
use super::transport::{Remote, resolve};
use super::{FETCHED, JOURNALS, PENDING, Paths, SENT, SyncError, identity, open_repo, ref_oid, set_ref};
use crate::config::Config;
use crate::crypt::Secret;
use crate::fold::{Fold, FoldOptions};
use crate::project::Project;
use crate::store::Store;

/// What `walj sync` was asked to do.
#[derive(Debug, Clone, Default)]
pub(crate) struct SyncOptions {
    /// The git remote (default: `[sync] remote`, else the branch's upstream remote, else `origin`).
    pub remote: Option<String>,
    /// Say what would happen; publish nothing, change no copy.
    pub dry_run: bool,
    /// Agree to publish in plain text without being asked.
    pub yes: bool,
    /// Bounds on reading other machines' journals (`[limits]`, raised by flags); `None`: the
    /// config's.
    pub limits: Option<crate::config::Limits>,
}

/// What a sync may ask the user.
pub(crate) struct Prompts<'a> {
    /// Shows the plain-text notice and returns the answer; `None` when nobody can be asked
    /// (no terminal): the sync is then refused in one line.
    pub confirm: &'a mut dyn FnMut(&str) -> Option<bool>,
    /// The sync passphrase (`[sync] passphrase`): `WALJ_PASSPHRASE`, a prompt, else `None`.
    /// Asked at most once per sync, and only when needed.
    pub passphrase: &'a mut dyn FnMut() -> Option<Secret>,
}

/// What happened to this journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PublishState {
    /// Published now.
    Pushed,
    /// The remote already had it.
    UpToDate,
    /// A dry run: would be published.
    WouldPush,
    /// No journal yet: nothing to publish.
    Nothing,
}

/// This journal's side of a sync.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Published {
    pub state: PublishState,
    pub commit: Option<String>,
    pub epoch: u64,
    /// The journal was rewritten since the last sync: this commit starts a new epoch.
    pub new_epoch: bool,
    pub journal_bytes: u64,
    /// Journal bytes the remote had before this sync (null: none).
    pub remote_bytes: Option<u64>,
    pub segments_written: u64,
    pub bytes_written: u64,
    pub images_added: usize,
    /// Images left out because they hold secret-looking text.
    pub images_withheld: usize,
    /// Transcript bytes in the segments written.
    pub transcript_bytes_written: u64,
    /// `age` when what was published is encrypted, else null.
    pub encrypted: Option<String>,
    /// Transcripts published (null: transcripts are not synced).
    pub transcripts: Option<usize>,
}

/// What a sync did (the `--json` output).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SyncReport {
    pub remote: String,
    pub url: String,
    pub journal: String,
    pub name: String,
    pub dry_run: bool,
    /// The plain-text notice, when a dry run met a remote not agreed to yet.
    pub notice: Option<String>,
    /// Triage records other machines made about this journal's entries (`walj mark`,
    /// `walj handoff` there), recorded here by this sync.
    pub imported: usize,
    pub published: Published,
    /// Every other journal on the remote.
    pub journals: Vec<Seen>,
}

/// What the first plain-text sync to `remote` says before it asks.
pub(crate) fn notice(remote: &Remote, transcripts: bool) -> String {
    format!(
        "walj sync publishes this checkout's journal to remote {:?} ({}) under refs/walj/journals/, unencrypted.\n\
         Anyone who can read that repository can read:\n  \
         - every journal line: your prompts, Bash command lines, file paths, session ids and times;\n  \
         - the pre- and post-images of the files Claude changed (uncommitted work included){}.\n\
         Files matching [capture] never in .walj/config.toml are never stored, so never published; {}\n\
         To publish encrypted instead, set [sync] recipients = [\"age1…\"] (or passphrase = true).",
        remote.name,
        remote.push_url,
        if transcripts {
            ";\n  - the transcripts of Claude Code sessions ([sync] transcripts = true): whole conversations, secrets redacted"
        } else {
            ""
        },
        if transcripts { "" } else { "transcripts are not published." }
    )
}

/// The one line a plain-text sync that could not ask says.
fn not_asked(remote: &Remote) -> String {
    format!(
        "not synced: the first sync to remote {:?} ({}) would publish your prompts, Bash command lines, paths and file images unencrypted, and no terminal is here to ask; run `walj sync --yes` to agree, or set [sync] recipients (or passphrase) in .walj/config.toml to encrypt; nothing was changed",
        remote.name, remote.push_url
    )
}

fn consented(paths: &Paths, url: &str) -> bool {
    super::identity::migrate(paths);
    std::fs::read_to_string(&paths.consent).is_ok_and(|t| t.lines().any(|l| l == url))
}

fn record_consent(paths: &Paths, url: &str) -> Result<(), SyncError> {
    if let Some(dir) = paths.consent.parent() {
        crate::fsutil::create_private_dir(dir).map_err(SyncError::io(format!("creating {}", dir.display())))?;
    }
    let mut f = crate::fsutil::open_private(&paths.consent, std::fs::OpenOptions::new().create(true).append(true))
        .map_err(SyncError::io(format!("writing {}", paths.consent.display())))?;
    writeln!(f, "{url}").map_err(SyncError::io(format!("writing {}", paths.consent.display())))
}

/// Per session: its state now and its unresolved entries (the manifest's `sessions`), and the
/// fold they come from.
fn session_states(project: &Project) -> Result<(Vec<SessionState>, Fold), SyncError> {
    let mut fold = Fold::load(&project.journal, &FoldOptions::default())
        .map_err(SyncError::io(format!("reading {}", project.journal.display())))?;
    fold.check_disk(project);
    let mut unresolved: HashMap<&str, usize> = HashMap::new();
    for e in fold.unresolved() {
        *unresolved.entry(e.session.as_str()).or_default() += 1;
    }
    let states = fold
        .sessions
        .iter()
        .map(|s| SessionState {
            session: s.session.clone(),
            sid: s.sid.clone(),
            state: s.status().as_str().to_string(),
            last_ts: s.last_ts.clone(),
            unresolved: unresolved.get(s.session.as_str()).copied().unwrap_or(0),
        })
        .collect();
    Ok((states, fold))
}

/// The sessions whose transcripts are published: each one's safe copy brought up to date
/// with its original first (a crashed session had no Stop to copy its last turn).
fn transcript_sessions(project: &Project, fold: &Fold, catch_up: bool) -> Vec<String> {
    let mut out = Vec::new();
    for s in fold.sessions.iter().filter(|s| !s.session.is_empty()) {
        if catch_up && let Some(t) = s.transcript.as_deref() {
            let _ = crate::session::transcript::copy(project, &s.session, std::path::Path::new(t));
        }
        if crate::session::transcript::paths(project, &s.session).copy.is_file() {
            out.push(s.session.clone());
        }
    }
    out
}

/// `[sync] identity` files: `~/` is the home folder, a relative path is the project's.
fn identity_files(project: &Project, config: &Config) -> Vec<std::path::PathBuf> {
    config
        .sync
        .identity
        .0
        .iter()
        .map(|p| match p.strip_prefix("~/") {
            Some(rest) => std::env::home_dir().unwrap_or_default().join(rest),
            None => project.root.join(p),
        })
        .collect()
}

/// Runs one sync. `prompts.confirm` shows the plain-text notice and returns the user's
/// answer (called at most once, and only when the user has not agreed for this remote yet and
/// nothing is encrypted).
pub(crate) fn sync(project: &Project, opts: &SyncOptions, prompts: Prompts<'_>) -> Result<SyncReport, SyncError> {
    let (config, matcher) = Config::load_with_matcher(&project.config_path()).map_err(|e| {
        SyncError::Refused(format!("{e}; fix it first: its [capture] never rules decide what is published"))
    })?;
    let wanted = Wanted::from_config(&config.sync)?;
    let remote = resolve(&project.root, opts.remote.as_deref().or(config.sync.remote.as_deref()))?;
    let paths = Paths::new(project);
    let transcripts = config.sync.transcripts.unwrap_or(wanted.sealed());
    let mut report_notice = None;
    let mut agree = false;
    if !wanted.sealed() && !consented(&paths, &remote.push_url) {
        let text = notice(&remote, transcripts);
        if opts.dry_run {
            report_notice = Some(text);
        } else if opts.yes {
            agree = true;
        } else {
            match (prompts.confirm)(&text) {
                Some(true) => agree = true,
                Some(false) => {
                    return Err(SyncError::NotConfirmed(format!(
                        "not synced: publishing to {} in plain text was not confirmed (`walj sync --yes` confirms); nothing was changed",
                        remote.name
                    )));
                }
                None => return Err(SyncError::NotConfirmed(not_asked(&remote))),
            }
        }
    }
    project.ensure_dir().map_err(SyncError::io(format!("creating {}", project.dir.display())))?;
    crate::fsutil::create_private_dir(&paths.dir)
        .map_err(SyncError::io(format!("creating {}", paths.dir.display())))?;
    let lock =
        crate::fsutil::open_private(&paths.lock, std::fs::OpenOptions::new().create(true).truncate(false).write(true))
            .map_err(SyncError::io(format!("opening {}", paths.lock.display())))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Err(SyncError::Busy),
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(SyncError::Io { what: format!("locking {}", paths.lock.display()), source: e });
        }
    }
    // The passphrase, asked at most once.
    let mut asked: Option<Option<Secret>> = None;
    let ask_passphrase = prompts.passphrase;
    let mut passphrase = || asked.get_or_insert_with(&mut *ask_passphrase).clone();
    let ctx = Ctx {
        project,
        opts,
        config: &config,
        matcher: &matcher,
        remote: &remote,
        paths: &paths,
        wanted: &wanted,
        transcripts,
    };
    let result = locked(&ctx, agree, &mut passphrase);
    let _ = lock.unlock();
    let mut report = result?;
    report.notice = report_notice;
    Ok(report)
}

/// What one sync works with.
struct Ctx<'a> {
    project: &'a Project,
    opts: &'a SyncOptions,
    config: &'a Config,
    matcher: &'a crate::config::Matcher,
    remote: &'a Remote,
    paths: &'a Paths,
    wanted: &'a Wanted,
    /// Publish transcripts.
    transcripts: bool,
}

fn locked(ctx: &Ctx<'_>, agree: bool, passphrase: &mut dyn FnMut() -> Option<Secret>) -> Result<SyncReport, SyncError> {
    let Ctx { project, opts, config, matcher, remote, paths, wanted, transcripts } = *ctx;
    if agree {
        record_consent(paths, &remote.push_url)?;
    }
    let ident = identity::ensure(project, paths, config.sync.name.as_deref())?;
    let id = ident.id.as_str();
    let repo = open_repo(paths)?;
    super::remove_stale_locks(paths);
    let seal: Option<Seal> = super::seal::seal(paths, wanted)?;
    let fetched_refs = remote.fetch(&paths.repo, |name, oid| {
        let tail = name.strip_prefix(JOURNALS).unwrap_or(name);
        ref_oid(&repo, &format!("{FETCHED}{tail}")).is_some_and(|o| o.to_string() == oid)
    })?;
    super::record_fetched(&repo, &fetched_refs)?;
    let failed = fetched_refs.failed;
    if let Some((_, why)) = failed.iter().find(|(f, _)| f == id) {
        return Err(SyncError::Remote(format!(
            "fetching this journal's own ref {JOURNALS}{id} from {}: {why}; nothing was changed",
            remote.name
        )));
    }

    // This journal's ref on the remote must be what this checkout published.
    let (pushed_ref, pending_ref) = (format!("{JOURNALS}{id}"), format!("{PENDING}{id}"));
    let fetched = ref_oid(&repo, &format!("{FETCHED}{id}"));
    let mut pushed = ref_oid(&repo, &pushed_ref);
    let pending = ref_oid(&repo, &pending_ref);
    let sent = |oid: git2::Oid| ref_oid(&repo, &format!("{SENT}{id}/{oid}")).is_some();
    if fetched.is_some() && (fetched == pending || fetched.is_some_and(sent)) && fetched != pushed {
        // A sync killed after the remote took its push: take it as published.
        if !opts.dry_run {
            set_ref(&repo, &pushed_ref, fetched)?;
            set_ref(&repo, &pending_ref, None)?;
            clear_sent(&repo, id)?;
        }
        pushed = fetched;
    }
    if let Some(f) = fetched {
        let ours = pushed.is_some_and(|p| p == f || repo.graph_descendant_of(p, f).unwrap_or(false));
        if !ours {
            return Err(SyncError::Refused(format!(
                "{JOURNALS}{id} on {} is not what this checkout published (another checkout with a copy of this .walj/, or a rewritten ref); refused, nothing was changed",
                remote.name
            )));
        }
    }
    let remote_bytes = fetched
        .and_then(|f| repo.find_commit(f).ok())
        .and_then(|c| super::publish::manifest_of(&repo, &c).ok())
        .map(|m| m.journal_bytes);

    let store = Store::new(&paths.store);
    if !opts.dry_run {
        super::elsewhere::rebuild_sidecar(project)?;
    }
    // One commit built from the journal as it is now and pushed (`parent`: what this checkout
    // published; `on_remote`: what the remote has, the lease).
    let round = |parent: Option<git2::Oid>,
                 on_remote: Option<git2::Oid>,
                 passphrase: &mut dyn FnMut() -> Option<Secret>|
     -> Result<(super::publish::Built, PublishState), SyncError> {
        let (sessions, fold) = session_states(project)?;
        let sources = transcripts.then(|| super::transcripts::Sources {
            project,
            sessions: transcript_sessions(project, &fold, !opts.dry_run),
            never: matcher,
        });
        drop(fold);
        let mut wrap = || match &seal {
            Some(s) => super::seal::wrap(s, wanted, &mut *passphrase),
            None => Err(SyncError::Refused("internal: no seal to wrap".into())),
        };
        let built = build(Input {
            repo: &repo,
            journal: &project.journal,
            store: &store,
            ident: &ident,
            parent,
            never: Some(matcher),
            sessions,
            synced_at: crate::journal::record::now_ts(),
            root: project.root.to_string_lossy().into_owned(),
            seal: seal.as_ref(),
            wrap: &mut wrap,
            transcripts: sources,
        })?;
        let state = match built.commit {
            None => PublishState::Nothing,
            Some(c) if on_remote == Some(c) => PublishState::UpToDate,
            Some(_) if opts.dry_run => PublishState::WouldPush,
            Some(c) => {
                set_ref(&repo, &pending_ref, Some(c))?;
                set_ref(&repo, &format!("{SENT}{id}/{c}"), Some(c))?;
                remote.push(&paths.repo, id, c, on_remote)?;
                set_ref(&repo, &pushed_ref, Some(c))?;
                set_ref(&repo, &pending_ref, None)?;
                clear_sent(&repo, id)?;
                PublishState::Pushed
            }
        };
        Ok((built, state))
    };
    let (mut built, mut state) = round(pushed, fetched, &mut *passphrase)?;
    let mut opener = Opener { paths, identities: identity_files(project, config), passphrase: &mut *passphrase };
    let limits = opts.limits.unwrap_or(config.limits);
    let journals = accept_all(&repo, paths, id, opts.dry_run, &failed, &mut opener, limits)?;
    // What other machines decided about this journal's entries: recorded here, and published
    // at once so that they see it agreed.
    let mut imported = 0;
    if !opts.dry_run {
        imported = super::elsewhere::import(project, paths, id, &journals)?;
        if imported > 0 {
            let now = ref_oid(&repo, &pushed_ref);
            let (b, st) = round(now, now, &mut *passphrase)?;
            if st == PublishState::Pushed || state != PublishState::Pushed {
                state = st;
            }
            built = b;
        }
        // The SessionStart line's counts. Folding the copies also writes the caches of those
        // this sync changed (their fold snapshots, then their id indexes), so that the next
        // `walj recover` or TUI reads only what follows them.
        let (copies, _) = super::remotes::load(project, &crate::fold::FoldOptions::default());
        for r in copies.iter().filter(|r| journals.iter().any(|s| s.journal == r.id && s.verdict.changes())) {
            let _ = r.ids();
        }
        if let Err(e) = super::note::write_summaries_of(project, &copies) {
            eprintln!("walj: warning: writing .walj/remotes/summary.json: {e}");
        }
    }
    let m = &built.manifest;
    Ok(SyncReport {
        remote: remote.name.clone(),
        url: remote.url.clone(),
        journal: ident.id.clone(),
        name: ident.name.clone(),
        dry_run: opts.dry_run,
        notice: None,
        imported,
        published: Published {
            state,
            commit: built.commit.map(|c| c.to_string()),
            epoch: m.epoch,
            new_epoch: built.new_epoch,
            journal_bytes: m.journal_bytes,
            remote_bytes,
            segments_written: built.segments_written,
            bytes_written: built.bytes_written,
            images_added: built.images_added,
            images_withheld: built.images_withheld,
            transcript_bytes_written: built.transcript_bytes,
            encrypted: m.encryption.as_ref().map(|e| e.scheme.clone()),
            transcripts: transcripts.then_some(m.transcripts.len()),
        },
        journals,
    })
}

/// Forgets the commits this checkout sent ([`SENT`]) once one of them is known to have landed.
fn clear_sent(repo: &git2::Repository, id: &str) -> Result<(), SyncError> {
    let names: Vec<String> = repo
        .references_glob(&format!("{SENT}{id}/*"))?
        .flatten()
        .filter_map(|r| r.name().ok().map(str::to_string))
        .collect();
    for n in names {
        set_ref(repo, &n, None)?;
    }
    Ok(())
}
