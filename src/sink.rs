//! Where an output file goes, decided before anything is measured, and written so that it is
//! either complete or untouched.
//!
//! - A regular file (or a new name) is written to an unnamed temporary file (O_TMPFILE) in its
//!   directory and linked into place only when complete, keeping the old file's mode; killed
//!   midway, the kernel frees the unnamed file and the old one stays.
//! - Through a symlink, the link's final target is what gets written; the link stays a link.
//! - A FIFO, a character device, or the process's own descriptors (/dev/stdout, /dev/fd/N) are
//!   streams: written directly, never replaced.
//! - A directory, a trailing slash, a block device, a socket, a read-only file and a FIFO
//!   without a reader are refused with the reason.
//! - Two outputs naming one place are refused, however they are spelled (`..`, a symlinked
//!   directory, `-` and /dev/stdout); so is a file another live faultscale run is writing
//!   (a byte-range lock on its directory, see `claim`).
//! - A stream whose reader stops reading cannot hold the run forever: a stop signal (SIGINT,
//!   SIGTERM, SIGHUP, ...) ends the write with an error naming the output.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use crate::run::signals;

/// Where an output goes, as the command line named it.
#[derive(Debug, Clone)]
pub enum OutputPath {
    Stdout,
    File(PathBuf),
}

impl OutputPath {
    /// `-` is stdout.
    pub fn parse(text: &str) -> Self {
        if text == "-" { OutputPath::Stdout } else { OutputPath::File(PathBuf::from(text)) }
    }
}

/// Whether standard output was closed when faultscale started (`--csv - >&-`). Rust's runtime
/// reopens a closed stdout on /dev/null before `main`, so this is read earlier, from the ELF
/// constructors (.init_array), which run before the runtime's start-up.
static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[used]
#[unsafe(link_section = ".init_array")]
static NOTE_CLOSED_STDOUT: extern "C" fn() = {
    extern "C" fn note() {
        // SAFETY: F_GETFD only asks whether descriptor 1 is open.
        if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
            STDOUT_CLOSED_AT_START.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    note
};

/// Whether standard output was closed when faultscale started (`>&-`).
pub fn stdout_closed_at_start() -> bool {
    STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::SeqCst)
}

/// Symlink hops followed before giving up (the kernel's own limit is 40).
const MAX_LINKS: usize = 40;

/// What an output path names, once its links are followed.
#[derive(Debug, PartialEq, Eq)]
enum Resolved {
    /// A regular file that exists, or a new name in an existing directory.
    File(PathBuf),
    /// Written in place: a FIFO or a character device.
    Stream(PathBuf),
    /// One of this process's own descriptors, through /dev/stdout, /dev/fd/N or /proc/self/fd/N.
    Descriptor(i32),
}

/// The descriptor a path names when it is one of this process's own.
fn own_descriptor(path: &Path) -> Option<i32> {
    let text = path.to_str()?;
    let number = match text {
        "/dev/stdin" => return Some(0),
        "/dev/stdout" => return Some(1),
        "/dev/stderr" => return Some(2),
        _ => text
            .strip_prefix("/dev/fd/")
            .or_else(|| text.strip_prefix("/proc/self/fd/"))
            .or_else(|| text.strip_prefix("/proc/thread-self/fd/"))
            .or_else(|| text.strip_prefix(&format!("/proc/{}/fd/", std::process::id())))?,
    };
    number.parse().ok()
}

fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(std::env::current_dir().context("reading the current directory")?.join(path))
}

fn writable(path: &Path) -> bool {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: a valid C string.
    unsafe { libc::access(c_path.as_ptr(), libc::W_OK) == 0 }
}

/// Follows `text` to what it names, refusing what cannot be an output.
fn resolve(option: &str, text: &str) -> Result<Resolved> {
    let bad = |why: String| anyhow!("{option} {text}: {why}");
    if text.is_empty() {
        bail!("{option} \"\": empty; give a file name");
    }
    if text.ends_with('/') {
        bail!("{option} {text}: ends in /, which names a directory; give a file name");
    }
    if matches!(Path::new(text).as_os_str().as_bytes().rsplit(|&b| b == b'/').next(), Some(b".") | Some(b"..")) {
        bail!("{option} {text}: ends in . or .., which name a directory; give a file name");
    }
    let mut path = absolute(Path::new(text))?;
    for _ in 0..MAX_LINKS {
        if let Some(fd) = own_descriptor(&path) {
            return Ok(Resolved::Descriptor(fd));
        }
        let metadata = match std::fs::symlink_metadata(&path) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let parent = path.parent().unwrap_or(Path::new("/"));
                if !parent.is_dir() {
                    return Err(bad(format!("{} is not an existing directory; create it first", parent.display())));
                }
                if !writable(parent) {
                    return Err(bad(format!("cannot create files in {}; give a writable place", parent.display())));
                }
                return Ok(Resolved::File(path));
            }
            Err(e) => return Err(bad(e.to_string())),
        };
        let kind = metadata.file_type();
        if kind.is_symlink() {
            let target = std::fs::read_link(&path).map_err(|e| bad(e.to_string()))?;
            path = path.parent().unwrap_or(Path::new("/")).join(target);
            continue;
        }
        if kind.is_dir() {
            return Err(bad("is a directory; give a file name".into()));
        }
        if kind.is_block_device() || kind.is_socket() {
            return Err(bad("is a block device or socket, not a place for results; give a file name".into()));
        }
        if !writable(&path) {
            return Err(bad("is not writable; give another name".into()));
        }
        if kind.is_fifo() || kind.is_char_device() {
            return Ok(Resolved::Stream(path));
        }
        // Root may write anything; a file nobody may write is still meant to stay as it is.
        if metadata.permissions().mode() & 0o222 == 0 {
            return Err(bad(format!(
                "is read-only (mode {:o}); make it writable or give another name",
                metadata.permissions().mode() & 0o7777
            )));
        }
        let parent = path.parent().unwrap_or(Path::new("/"));
        if !writable(parent) {
            return Err(bad(format!("{} is not writable, so the file cannot be replaced whole", parent.display())));
        }
        return Ok(Resolved::File(path));
    }
    Err(bad(format!("more than {MAX_LINKS} symbolic links; give the file itself")))
}

/// What makes two outputs the same place: the file or stream (device, inode), or a new
/// file's name in its directory with every `..` and symlink of the directory resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    NewFile(PathBuf),
}

/// The place `path` names, for a file about to be replaced or created there.
fn file_identity(path: &Path) -> Identity {
    if let Ok(stat) = std::fs::metadata(path) {
        return Identity::Inode(stat.dev(), stat.ino());
    }
    Identity::NewFile(canonical_place(path))
}

/// `path` with its directory canonicalized (the file itself may not exist yet).
fn canonical_place(path: &Path) -> PathBuf {
    let parent = path.parent().unwrap_or(Path::new("/"));
    let parent = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
    match path.file_name() {
        Some(name) => parent.join(name),
        None => parent,
    }
}

/// Standard output's (device, inode), to tell an output that writes there by another name.
fn stdout_identity() -> Option<Identity> {
    // SAFETY: fstat into a zeroed buffer of the right type.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        (libc::fstat(1, &mut stat) == 0).then_some(Identity::Inode(stat.st_dev, stat.st_ino))
    }
}

/// An output opened before the run: it cannot fail later for a reason known now.
pub struct Sink {
    /// How the user named it, for messages: `--csv out.csv`, `--json -`.
    label: String,
    identity: Option<Identity>,
    target: Target,
    /// For a file replaced whole: the lock on its directory that tells other runs this name is
    /// taken (`claim`), held until the run ends.
    claim: Option<File>,
}

enum Target {
    Stream(File),
    Replace(Pending),
}

/// A regular file being written: unnamed until complete.
struct Pending {
    destination: PathBuf,
    file: File,
    /// Set when the filesystem has no O_TMPFILE: a dot-name beside the destination, removed
    /// on every exit path that runs destructors.
    named: Option<PathBuf>,
}

impl Sink {
    pub fn open(option: &str, output: &OutputPath) -> Result<Self> {
        let text = match output {
            OutputPath::Stdout => "-".to_string(),
            OutputPath::File(path) => path.to_string_lossy().into_owned(),
        };
        let resolved = match output {
            OutputPath::Stdout => Resolved::Descriptor(1),
            OutputPath::File(_) => resolve(option, &text)?,
        };
        let stream = |file: File| -> Result<(Option<Identity>, Target)> {
            let stat = file.metadata().with_context(|| format!("{option} {text}"))?;
            Ok((Some(Identity::Inode(stat.dev(), stat.ino())), Target::Stream(file)))
        };
        let (identity, target) = match resolved {
            Resolved::Descriptor(1) if STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::SeqCst) => {
                bail!(
                    "{option} {text}: standard output was closed when faultscale started; give a file name, or open it"
                )
            }
            Resolved::Descriptor(fd) => {
                // SAFETY: dup of a descriptor number; a bad one is an error, not UB.
                let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
                if copy < 0 {
                    bail!("{option} {text}: descriptor {fd} is not open: {}", std::io::Error::last_os_error());
                }
                // SAFETY: a fresh descriptor we own.
                stream(unsafe { File::from_raw_fd(copy) })?
            }
            Resolved::Stream(path) => stream(open_stream(&path).map_err(|e| anyhow!("{option} {text}: {e}"))?)?,
            Resolved::File(path) => {
                let pending = Pending::create(&path).map_err(|e| anyhow!("{option} {text}: {e:#}"))?;
                (Some(file_identity(&path)), Target::Replace(pending))
            }
        };
        Ok(Sink { label: format!("{option} {text}"), identity, target, claim: None })
    }

    /// For a file that existed when the run opened it, which the run's writes replace: its
    /// name as the user gave it. None for a new file or a stream.
    pub fn existing_file(&self) -> Option<&str> {
        let existed = matches!(self.identity, Some(Identity::Inode(..)));
        (existed && matches!(self.target, Target::Replace(_)))
            .then(|| self.label.split_once(' ').map_or("", |(_, path)| path))
    }

    /// Whether this output writes to standard output, by `-` or by another name for it
    /// (/dev/stdout, the terminal's own device, the FIFO stdout is): the table must go elsewhere.
    pub fn shares_stdout(&self) -> bool {
        self.identity.is_some() && self.identity == stdout_identity()
    }

    /// Refuses an output that is one of the command's inputs (the result file `plot` draws, a
    /// profile a run builds from), however spelled: writing it would destroy what was read.
    pub fn refuse_input(&self, what: &str, input: &Path) -> Result<()> {
        if std::fs::metadata(input).is_ok_and(|m| m.is_file()) && self.identity == Some(file_identity(input)) {
            bail!("{} is {what}; give the output its own name", self.label);
        }
        Ok(())
    }

    /// Refuses an output that is `path`, a file another output of the run will write (`what`,
    /// e.g. a flame graph of --profile-dir), whether that file exists yet or not.
    pub fn refuse_place(&self, what: &str, path: &Path) -> Result<()> {
        let Ok(path) = absolute(path) else { return Ok(()) };
        if self.identity.is_some() && self.identity == Some(file_identity(&path)) {
            bail!("{} and {what} name the same file; give each output its own", self.label);
        }
        Ok(())
    }

    /// Refuses two outputs that name one place: one would overwrite the other. Then claims
    /// each file for this run, refusing one that another live run is writing.
    pub fn check_distinct(sinks: &mut [&mut Sink]) -> Result<()> {
        for (i, a) in sinks.iter().enumerate() {
            for b in &sinks[i + 1..] {
                if a.identity.is_some() && a.identity == b.identity {
                    bail!("{} and {} name the same file; give each output its own", a.label, b.label);
                }
            }
        }
        for sink in sinks.iter_mut() {
            if let Target::Replace(pending) = &sink.target {
                sink.claim = claim(&pending.destination).map_err(|e| anyhow!("{}: {e}", sink.label))?;
            }
        }
        Ok(())
    }

    /// Where a file replaced whole goes (None for a stream): where its checkpoint is, if any.
    pub fn destination(&self) -> Option<&Path> {
        match &self.target {
            Target::Replace(pending) => Some(&pending.destination),
            Target::Stream(_) => None,
        }
    }

    /// Whether the output is a stream (stdout, a FIFO, a device): written once, at the end, and
    /// never a checkpoint.
    pub fn is_stream(&self) -> bool {
        matches!(self.target, Target::Stream(_))
    }

    /// Writes what there is so far, for an output replaced whole (a regular file): between
    /// slices, so a run killed later keeps what it measured. A stream (FIFO, device, stdout)
    /// cannot be rewritten and gets its content once, at the end.
    pub fn checkpoint(&mut self, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
        let Target::Replace(last) = &self.target else { return Ok(()) };
        let mut pending = Pending::create(&last.destination).with_context(|| format!("writing {}", self.label))?;
        // Buffered: the JSON writer makes a write per token (260,000 system calls for a 2 s run).
        let mut buffered = std::io::BufWriter::new(&mut pending.file);
        write(&mut buffered).and_then(|()| Ok(buffered.flush()?)).with_context(|| format!("writing {}", self.label))?;
        drop(buffered);
        pending.commit().with_context(|| format!("writing {}", self.label))
    }

    pub fn write_with(self, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
        let label = self.label;
        match self.target {
            Target::Stream(file) => {
                let mut stream = std::io::BufWriter::new(Interruptible::new(file));
                write(&mut stream).and_then(|()| Ok(stream.flush()?)).with_context(|| format!("writing {label}"))?;
            }
            Target::Replace(mut pending) => {
                let mut buffered = std::io::BufWriter::new(&mut pending.file);
                write(&mut buffered)
                    .and_then(|()| Ok(buffered.flush()?))
                    .with_context(|| format!("writing {label}"))?;
                drop(buffered);
                pending.commit().with_context(|| format!("writing {label}"))?;
            }
        }
        Ok(())
    }
}

/// A stream's writes, ended by a stop signal delivered after the measuring ended (before the
/// write began or during it), also while the reader is not reading: the run's signal handlers are installed without SA_RESTART, so a
/// blocked write returns EINTR, where std's write_all would retry forever.
struct Interruptible {
    file: File,
    signals_before: u32,
    /// Set once a signal ended a write: every later write fails at once, so the buffers that
    /// flush when dropped (BufWriter's, the CSV writer's) cannot block again.
    stopped: Option<String>,
}

impl Interruptible {
    fn new(file: File) -> Self {
        Interruptible { file, signals_before: signals::stop_baseline(), stopped: None }
    }
}

impl Write for Interruptible {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        loop {
            // Checked before every write too: a signal that lands after part of a write has
            // gone through returns that part, not EINTR, and the next write would block again.
            if self.stopped.is_none() && signals::delivered() != self.signals_before {
                let signal = signals::latest().map(crate::text::signal_name).unwrap_or("a signal".into());
                self.stopped = Some(format!("stopped by {signal} while writing; what the reader got is incomplete"));
            }
            if let Some(why) = &self.stopped {
                return Err(std::io::Error::other(why.clone()));
            }
            match self.file.write(bytes) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Marks `destination`'s name as this run's output until the returned lock closes: a shared
/// byte-range lock (an open-file-description lock, released by the kernel when the run dies,
/// SIGKILL included) on its directory, at an offset made from the name, so no file is left
/// behind. A run that finds another's lock at that offset refuses the name: both would
/// write the file and the one finishing last would silently keep only its results. Where
/// the filesystem has no such locks (NFS), nothing is claimed.
fn claim(destination: &Path) -> Result<Option<File>> {
    let place = canonical_place(destination);
    let (Some(dir), Some(name)) = (place.parent(), place.file_name()) else { return Ok(None) };
    let dir = match File::open(dir) {
        Ok(dir) => dir,
        Err(e) => {
            say!(
                "faultscale: warning: {}: cannot open it ({e}), so another faultscale run writing {} would not be noticed",
                dir.display(),
                place.display()
            );
            return Ok(None);
        }
    };
    let taken = "another faultscale run is writing this file now, and the one to finish last would replace the other's results; give this run another name, or wait for that one to end";
    Ok(hold(&dir, name_offset(name.as_bytes()), taken)?.then_some(dir))
}

/// Whether a live faultscale run holds `path` as its output now (`claim`'s lock is taken):
/// None where that cannot be known (a directory that cannot be opened, no such locks).
pub fn written_by_live_run(path: &Path) -> Option<bool> {
    let place = std::fs::canonicalize(path).ok()?;
    let (dir, name) = (place.parent()?, place.file_name()?);
    let dir = File::open(dir).ok()?;
    let mut probe = byte_lock(libc::F_WRLCK, name_offset(name.as_bytes()));
    // SAFETY: fcntl with a valid flock record on a descriptor we own; GETLK only fills it in.
    let probed = unsafe { libc::fcntl(dir.as_raw_fd(), libc::F_OFD_GETLK, &mut probe) } == 0;
    probed.then_some(probe.l_type != libc::F_UNLCK as libc::c_short)
}

/// Marks `dir` (a --profile-dir, made only at the end) as this run's until the returned lock
/// closes, as `claim` marks a file: a lock on the root directory at an offset made from its
/// absolute path (the nearest existing ancestor resolved, the rest as given), so two runs see
/// each other whether the directory exists yet or not, however it is spelled.
pub fn claim_directory(dir: &Path) -> Result<Option<File>> {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let existing = absolute.ancestors().find(|a| a.exists()).unwrap_or(Path::new("/"));
    let rest = absolute.strip_prefix(existing).unwrap_or(Path::new(""));
    let place = std::fs::canonicalize(existing).unwrap_or_else(|_| existing.to_path_buf()).join(rest);
    let Ok(root) = File::open("/") else { return Ok(None) };
    let taken = "another faultscale run writes its profile into this directory now, and the one to finish last would replace the other's flame graphs; give this run another directory, or wait for that one to end";
    Ok(hold(&root, name_offset(place.as_os_str().as_bytes()), taken)?.then_some(root))
}

/// Takes a shared lock on byte `offset` of `dir` and refuses (`taken`) where another open
/// file description holds one there; false where the filesystem has no such locks.
fn hold(dir: &File, offset: i64, taken: &str) -> Result<bool> {
    let mut lock = byte_lock(libc::F_RDLCK, offset);
    // SAFETY: fcntl with a valid flock record on a descriptor we own.
    if unsafe { libc::fcntl(dir.as_raw_fd(), libc::F_OFD_SETLK, &mut lock) } != 0 {
        return Ok(false);
    }
    let mut probe = byte_lock(libc::F_WRLCK, offset);
    // SAFETY: as above; GETLK only fills in the record.
    let probed = unsafe { libc::fcntl(dir.as_raw_fd(), libc::F_OFD_GETLK, &mut probe) } == 0;
    if probed && probe.l_type != libc::F_UNLCK as libc::c_short {
        bail!("{taken}");
    }
    Ok(true)
}

fn byte_lock(kind: libc::c_int, offset: i64) -> libc::flock {
    // SAFETY: flock is plain data; zero is a valid start for every field.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = offset;
    lock.l_len = 1;
    lock
}

/// A stable offset for a file name (64-bit FNV-1a, below i64::MAX): the same in every run and
/// every version, so two faultscale builds see each other's claims.
fn name_offset(name: &[u8]) -> i64 {
    let hash = name
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3));
    (hash % (i64::MAX as u64 - 1)) as i64
}

/// Opens a FIFO or device for writing without creating or truncating anything. A FIFO with
/// no reader would block the run forever at the end: it is refused now instead.
fn open_stream(path: &Path) -> Result<File> {
    let file = OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path).map_err(
        |e| match e.raw_os_error() {
            Some(libc::ENXIO) => anyhow!("a FIFO with no reader; start the reader first"),
            _ => anyhow!("{e}"),
        },
    )?;
    // Writes block normally again: a slow reader must get everything.
    // SAFETY: fcntl on our own descriptor.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    Ok(file)
}

impl Pending {
    fn create(destination: &Path) -> Result<Self> {
        let parent = destination.parent().unwrap_or(Path::new("/"));
        let mode = std::fs::metadata(destination).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o644);
        let unnamed = OpenOptions::new().write(true).custom_flags(libc::O_TMPFILE).mode(mode).open(parent);
        let (file, named) = match unnamed {
            Ok(file) => (file, None),
            // Filesystems without O_TMPFILE (EOPNOTSUPP, or EISDIR on old kernels).
            Err(_) => {
                let named = temporary_name(destination);
                let file = OpenOptions::new().write(true).create_new(true).mode(mode).open(&named).map_err(|e| {
                    anyhow!(
                        "cannot create a file in {} ({})",
                        parent.display(),
                        crate::measure::machine::creation_error(parent, &e)
                    )
                })?;
                (file, Some(named))
            }
        };
        // The umask must not change an existing file's mode.
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        Ok(Pending { destination: destination.to_path_buf(), file, named })
    }

    fn commit(&mut self) -> Result<()> {
        self.file.flush()?;
        self.file.sync_data()?;
        let named = match self.named.take() {
            Some(named) => named,
            None => {
                let named = temporary_name(&self.destination);
                let _ = std::fs::remove_file(&named);
                let proc_path = CString::new(format!("/proc/self/fd/{}", self.file.as_raw_fd()))?;
                let target = CString::new(named.as_os_str().as_bytes())?;
                // SAFETY: valid C strings; links our unnamed file under a name in its directory.
                let rc = unsafe {
                    libc::linkat(
                        libc::AT_FDCWD,
                        proc_path.as_ptr(),
                        libc::AT_FDCWD,
                        target.as_ptr(),
                        libc::AT_SYMLINK_FOLLOW,
                    )
                };
                if rc != 0 {
                    return Err(anyhow!("linking the finished file: {}", std::io::Error::last_os_error()));
                }
                named
            }
        };
        std::fs::rename(&named, &self.destination).map_err(|e| {
            let _ = std::fs::remove_file(&named);
            anyhow!("renaming {} to {}: {e}", named.display(), self.destination.display())
        })
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(named) = self.named.take() {
            let _ = std::fs::remove_file(named);
        }
    }
}

/// The dot-name a finished file has for the instant before it is renamed into place (or, on a
/// filesystem without O_TMPFILE, while it is written). Numbered, so a checkpoint and the final
/// file of one output never share one.
fn temporary_name(destination: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let number = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = destination.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    destination.with_file_name(format!(".{name}.faultscale-{}-{number}.tmp", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &Path) -> Result<Sink> {
        Sink::open("--csv", &OutputPath::File(path.to_path_buf()))
    }

    #[test]
    fn regular_files_are_replaced_whole_and_keep_their_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let sink = open(&path).unwrap();
        // Nothing visible until the write completes.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        sink.write_with(|out| Ok(out.write_all(b"new")?)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn checkpoints_replace_the_file_until_the_final_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let mut sink = open(&path).unwrap();
        sink.checkpoint(|out| Ok(out.write_all(b"slice 1")?)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "slice 1");
        sink.checkpoint(|out| Ok(out.write_all(b"slices 1-2")?)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "slices 1-2");
        sink.write_with(|out| Ok(out.write_all(b"all")?)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "all");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
    }

    #[test]
    fn an_unfinished_file_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let sink = open(&dir.path().join("out.csv")).unwrap();
        drop(sink);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn symlinks_write_their_target_and_stay_links() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.csv");
        let link = dir.path().join("link.csv");
        std::fs::write(&target, "old").unwrap();
        std::os::unix::fs::symlink("target.csv", &link).unwrap();
        open(&link).unwrap().write_with(|out| Ok(out.write_all(b"new")?)).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    #[test]
    fn directories_slashes_and_read_only_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let read_only = dir.path().join("ro.csv");
        std::fs::write(&read_only, "keep").unwrap();
        std::fs::set_permissions(&read_only, std::fs::Permissions::from_mode(0o444)).unwrap();
        let slash = format!("{}/", dir.path().join("new").display());
        for (path, why) in [
            (dir.path().to_path_buf(), "is a directory"),
            (PathBuf::from(&slash), "ends in /"),
            (read_only.clone(), "read-only"),
            (dir.path().join("missing/out.csv"), "not an existing directory"),
        ] {
            let err = open(&path).err().unwrap_or_else(|| panic!("{} accepted", path.display())).to_string();
            assert!(err.starts_with("--csv ") && err.contains(why), "{}: {err}", path.display());
        }
        assert_eq!(std::fs::read_to_string(&read_only).unwrap(), "keep");
    }

    #[test]
    fn two_outputs_on_one_file_are_refused_however_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        std::fs::write(&path, "").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(&path, dir.path().join("alias.csv")).unwrap();
        std::os::unix::fs::symlink("sub", dir.path().join("link")).unwrap();
        let json = |path: PathBuf| Sink::open("--json", &OutputPath::File(path)).unwrap();
        for (a, b) in [
            (path.clone(), dir.path().join("alias.csv")),
            (dir.path().join("new.csv"), dir.path().join("./new.csv")),
            (dir.path().join("new.csv"), dir.path().join("sub/../new.csv")),
            (dir.path().join("sub/n.csv"), dir.path().join("link/n.csv")),
        ] {
            let (mut first, mut second) = (open(&a).unwrap(), json(b.clone()));
            let err = Sink::check_distinct(&mut [&mut first, &mut second]).err().map(|e| e.to_string());
            let err = err.unwrap_or_else(|| panic!("{} and {} accepted", a.display(), b.display()));
            assert!(err.contains("name the same file") && err.contains(&b.display().to_string()), "{err}");
        }
        let (mut first, mut second) = (open(&dir.path().join("sub/n.csv")).unwrap(), json(dir.path().join("n.csv")));
        Sink::check_distinct(&mut [&mut first, &mut second]).unwrap();
    }

    #[test]
    fn a_file_another_run_writes_is_refused_until_that_run_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let mut running = open(&path).unwrap();
        Sink::check_distinct(&mut [&mut running]).unwrap();
        // A second run's claim is another open file description: the same as another process.
        let mut second = open(&path).unwrap();
        let err = Sink::check_distinct(&mut [&mut second]).unwrap_err().to_string();
        assert!(err.contains("another faultscale run is writing this file"), "{err}");
        let mut other_name = open(&dir.path().join("other.csv")).unwrap();
        Sink::check_distinct(&mut [&mut other_name]).unwrap();
        drop(running);
        let mut third = open(&path).unwrap();
        Sink::check_distinct(&mut [&mut third]).unwrap();
    }

    #[test]
    fn a_fifo_without_reader_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let err = open(&fifo).err().expect("no reader").to_string();
        assert!(err.contains("no reader"), "{err}");
        assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }
}
