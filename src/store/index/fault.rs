//! What happens when LMDB faults on a damaged index.
//!
//! LMDB has no checksums: a flipped byte in a page pointer sends it to an address outside
//! its map (SIGSEGV) or past the end of the file (SIGBUS). The index is a cache, so that is
//! not a reason to die without an answer. While a transaction of the index is open in this
//! process ([`Active`]), a handler for those two signals writes the answer prepared in
//! advance ([`prepare`]: the command's error envelope, `INDEX_DAMAGED`, naming `elench
//! reindex`), leaves the file `index/DAMAGED` so that the next command rebuilds the index
//! into fresh files without reading it, and ends the process with exit code 4. A fault with
//! no transaction open, or at the stack pointer (a stack overflow), is not the index's: the
//! handler puts back the one it replaced (Rust's stack-overflow report, or the default) and
//! returns, so the fault happens again there.
//!
//! Everything the handler touches is made before it can run (leaked, never freed) and read
//! through atomics; it calls only `open`, `close`, `write`, `sigaction` and `_exit`, which
//! are async-signal-safe.

use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Once;

/// The file that marks an index as damaged (read by the store on open).
pub const FILE: &str = "DAMAGED";

/// The exit code of a process ended by a fault in the index (a precondition, like
/// `STORE_CORRUPT`).
pub const EXIT_CODE: i32 = 4;

/// Transactions of the index open in this process, or [`EXCLUSIVE`].
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// The value of [`ACTIVE`] while the map is being resized: no transaction may begin.
const EXCLUSIVE: usize = usize::MAX;

/// The answer the handler writes: bytes for stdout and for stderr.
struct Answer {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

static ANSWER: AtomicPtr<Answer> = AtomicPtr::new(std::ptr::null_mut());
/// The `DAMAGED` file of the index opened last, NUL-terminated.
static MARKER: AtomicPtr<CString> = AtomicPtr::new(std::ptr::null_mut());

/// The handlers the ones installed here replaced (SIGSEGV, SIGBUS).
static mut PREVIOUS: [std::mem::MaybeUninit<libc::sigaction>; 2] = [
    std::mem::MaybeUninit::zeroed(),
    std::mem::MaybeUninit::zeroed(),
];
static INSTALL: Once = Once::new();
const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// Held while a transaction of the index is open: a fault then is the index's.
pub struct Active(());

impl Active {
    pub fn new() -> Active {
        install();
        loop {
            let n = ACTIVE.load(Ordering::SeqCst);
            if n == EXCLUSIVE {
                // A resize of the map, which takes a moment.
                std::thread::yield_now();
                continue;
            }
            if ACTIVE
                .compare_exchange(n, n + 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return Active(());
            }
        }
    }
}

impl Default for Active {
    fn default() -> Active {
        Active::new()
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        ACTIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sets what a process ended by a fault in the index writes to stdout and stderr (the CLI
/// prepares its error envelope before the command runs; `fsck` its own report).
pub fn prepare(stdout: Vec<u8>, stderr: Vec<u8>) {
    let new = Box::into_raw(Box::new(Answer { stdout, stderr }));
    // The previous answer is leaked: the handler may be reading it.
    ANSWER.store(new, Ordering::SeqCst);
}

/// Names the index whose `DAMAGED` file the handler writes.
pub(super) fn watch(dir: &Path) {
    use std::os::unix::ffi::OsStrExt;
    if let Ok(c) = CString::new(dir.join(FILE).as_os_str().as_bytes()) {
        MARKER.store(Box::into_raw(Box::new(c)), Ordering::SeqCst);
    }
}

/// Whether the index in `dir` was marked damaged.
pub fn marked(dir: &Path) -> bool {
    dir.join(FILE).exists()
}

/// Marks the index in `dir` damaged, so that the next command rebuilds it.
pub fn mark(dir: &Path) {
    let _ = std::fs::write(dir.join(FILE), b"");
}

fn install() {
    INSTALL.call_once(|| {
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe (module
            // docs); PREVIOUS is written here once, before any handler can read it.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                let previous = std::ptr::addr_of_mut!(PREVIOUS[i]);
                libc::sigaction(sig, &action, (*previous).as_mut_ptr());
            }
        }
    });
}

/// Whether a SIGSEGV at `info`'s address is a stack overflow (the address within reach of
/// the stack pointer): Rust's own handler reports those, and the index is not at fault.
///
/// # Safety
/// `info` and `ctx` are the handler's arguments.
unsafe fn stack_overflow(info: *mut libc::siginfo_t, ctx: *mut libc::c_void) -> bool {
    if info.is_null() || ctx.is_null() {
        return false;
    }
    // SAFETY: the kernel passes a valid siginfo and ucontext to an SA_SIGINFO handler.
    let (addr, sp) = unsafe {
        let addr = (*info).si_addr() as usize;
        let uc = &*(ctx as *const libc::ucontext_t);
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        let sp = uc.uc_mcontext.gregs[libc::REG_RSP as usize] as usize;
        #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
        let sp = uc.uc_mcontext.sp as usize;
        #[cfg(not(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        )))]
        let sp = {
            let _ = uc;
            return false;
        };
        (addr, sp)
    };
    // A guard page is hit by a frame that starts near it.
    addr.abs_diff(sp) < 1 << 20
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: only async-signal-safe calls; the pointers were leaked before they were stored.
    unsafe {
        let overflow = sig == libc::SIGSEGV && stack_overflow(info, ctx);
        if overflow || ACTIVE.load(Ordering::SeqCst) == 0 {
            if let Some(i) = SIGNALS.iter().position(|&s| s == sig) {
                let previous = std::ptr::addr_of!(PREVIOUS[i]);
                libc::sigaction(sig, (*previous).as_ptr(), std::ptr::null_mut());
            }
            return;
        }
        let marker = MARKER.load(Ordering::SeqCst);
        if !marker.is_null() {
            let fd = libc::open(
                (*marker).as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
                0o644,
            );
            if fd >= 0 {
                libc::fsync(fd);
                libc::close(fd);
            }
        }
        let answer = ANSWER.load(Ordering::SeqCst);
        if answer.is_null() {
            write_all(2, DEFAULT_MESSAGE);
        } else {
            write_all(1, &(*answer).stdout);
            write_all(2, &(*answer).stderr);
        }
        libc::_exit(EXIT_CODE);
    }
}

const DEFAULT_MESSAGE: &[u8] = b"elench: the index is damaged (reading it faulted); the next \
command rebuilds it from the log, or run `elench reindex`\n";

/// The message of the answer (for whoever prepares it).
pub const MESSAGE: &str = "the index is damaged: reading it faulted (LMDB followed a page \
pointer out of its file); it is a cache of the log, and the next command rebuilds it from the \
log, or run `elench reindex`";

fn write_all(fd: libc::c_int, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: write(2) on a slice we own.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

/// Held while the map is resized: taken only when no transaction is open, and no
/// transaction begins until it is dropped.
pub(super) struct Exclusive {
    /// The [`Active`]s the taker holds itself (with no transaction open yet), given back on
    /// drop.
    held: usize,
}

impl Exclusive {
    /// Taken when the only [`Active`]s are the `held` ones of the caller.
    pub(super) fn take(held: usize) -> Option<Exclusive> {
        ACTIVE
            .compare_exchange(held, EXCLUSIVE, Ordering::SeqCst, Ordering::SeqCst)
            .ok()
            .map(|_| Exclusive { held })
    }
}

impl Drop for Exclusive {
    fn drop(&mut self) {
        ACTIVE.store(self.held, Ordering::SeqCst);
    }
}

/// Marks the index opened last damaged (an error from LMDB or a value that does not decode
/// says so), so that the next command rebuilds it.
pub fn mark_watched() {
    let marker = MARKER.load(Ordering::SeqCst);
    if marker.is_null() {
        return;
    }
    // SAFETY: stored from a leaked Box, never freed.
    let path = unsafe { &*marker };
    use std::os::unix::ffi::OsStrExt;
    let path = Path::new(std::ffi::OsStr::from_bytes(path.as_bytes()));
    if path.parent().is_some_and(Path::is_dir) {
        let _ = std::fs::write(path, b"");
    }
}
