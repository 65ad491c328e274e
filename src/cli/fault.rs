//! What happens when LMDB faults on a damaged index.
//!
//! LMDB has no checksums: a flipped byte in a page pointer sends it to an address outside
//! its map (SIGSEGV) or past the end of the file (SIGBUS). The index is a cache, so that is
//! not a reason to die without an answer. While a transaction of the index is open in this
//! process (the index tells [`Watch`], the watch of the CLI's environments), a handler for
//! those two signals writes the answer prepared in advance ([`prepare`]: the command's error
//! envelope, `INDEX_DAMAGED`, naming `elench reindex`), leaves the index's `DAMAGED` file
//! (`store::index::fault::FILE`) so that the next command rebuilds the index into fresh
//! files without reading it, and ends the process with exit code 4. A fault with no
//! transaction open, or at the stack pointer (a stack overflow), is not the index's: the
//! handler puts back the one it replaced (Rust's stack-overflow report, or the default) and
//! returns, so the fault happens again there.
//!
//! A signal handler belongs to the process, so this state is the front end's, not the
//! library's. Everything the handler touches is made before it can run (leaked, never
//! freed) and read through atomics; it calls only `open`, `fsync`, `close`, `write`,
//! `sigaction` and `_exit`, which are async-signal-safe.

use elench::store::IndexWatch;
use std::ffi::CStr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Once;

/// The exit code of a process ended by a fault in the index (a precondition, like
/// `STORE_CORRUPT`).
pub const EXIT_CODE: i32 = 4;

/// The message of the answer (for whoever prepares it).
pub const MESSAGE: &str = "the index is damaged: reading it faulted (LMDB followed a page \
pointer out of its file); it is a cache of the log, and the next command rebuilds it from the \
log, or run `elench reindex`";

/// Transactions of an index open in this process, in every environment.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// The answer the handler writes: bytes for stdout and for stderr.
struct Answer {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

static ANSWER: AtomicPtr<Answer> = AtomicPtr::new(std::ptr::null_mut());
/// The `DAMAGED` file of the index whose transaction began last, NUL-terminated (the index
/// hands over a `&'static CStr`).
static MARKER: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// The handlers the ones installed here replaced (SIGSEGV, SIGBUS).
static mut PREVIOUS: [std::mem::MaybeUninit<libc::sigaction>; 2] = [
    std::mem::MaybeUninit::zeroed(),
    std::mem::MaybeUninit::zeroed(),
];
static INSTALL: Once = Once::new();
const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// The watch the CLI (and the MCP server it starts) opens indexes under: it counts their
/// open transactions for the handler, which it installs on the first.
#[derive(Debug, Clone, Copy, Default)]
pub struct Watch;

impl IndexWatch for Watch {
    fn enter(&self, marker: &'static CStr) {
        install();
        // The marker first: a fault counted as the index's finds whose index it is.
        MARKER.store(marker.as_ptr().cast_mut(), Ordering::SeqCst);
        ACTIVE.fetch_add(1, Ordering::SeqCst);
    }

    fn leave(&self) {
        ACTIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Sets what a process ended by a fault in the index writes to stdout and stderr (the CLI
/// prepares its error envelope before the command runs; the MCP server its stderr line).
pub fn prepare(stdout: Vec<u8>, stderr: Vec<u8>) {
    let new = Box::into_raw(Box::new(Answer { stdout, stderr }));
    // The previous answer is leaked: the handler may be reading it.
    ANSWER.store(new, Ordering::SeqCst);
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
        if !marker.is_null() && *marker != 0 {
            let fd = libc::open(
                marker,
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
