// codeloop's call channel between a Rust test process and the solution's process.
// Values are written type-tagged and length-prefixed (b bool, i integer, d floating,
// c char, s string, l list, m map, t tuple, o some, n nothing, a dyn Any); decoding
// checks every tag and range, so only the declared types cross, and the test compares
// values in its own process. A `dyn Any` travels as its concrete type's name and
// value, from a closed list of plain types (an i32 stays an i32, a char a char);
// any other content is written as an unknown name that the reader refuses.
// Frames are "LENGTH\n" + payload.
// The test's side reads its nonce from stdin before main (`drive`) and prints it when
// the process exits with 0 (every test passed), or the vacuous line when no test called
// the solution; a NaN or an infinity the solution returns ends it as a failure.
#![allow(dead_code)]

use std::any::Any;
use std::collections::HashMap;
use std::fs::File;
use std::hash::Hash;
use std::io::{Read, Write};
use std::os::unix::io::FromRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

pub struct Reader<'a> {
    text: &'a [u8],
    at: usize,
    finite: bool,
}

impl<'a> Reader<'a> {
    pub fn new(text: &'a [u8]) -> Self {
        Reader { text, at: 0, finite: false }
    }
    /// A reader of the solution's reply on the test's side: NaN and infinities are refused.
    fn reply(text: &'a [u8]) -> Self {
        Reader { text, at: 0, finite: true }
    }
    fn tag(&mut self) -> Result<u8, String> {
        let tag = *self.text.get(self.at).ok_or("codeloop: value cut off")?;
        self.at += 1;
        Ok(tag)
    }
    fn expect(&mut self, wanted: u8) -> Result<(), String> {
        if self.tag()? != wanted {
            return Err("codeloop: value of another type".to_string());
        }
        Ok(())
    }
    fn until(&mut self, end: u8) -> Result<&'a str, String> {
        let rest = &self.text[self.at..];
        let stop = rest.iter().position(|&c| c == end).ok_or("codeloop: value cut off")?;
        self.at += stop + 1;
        std::str::from_utf8(&rest[..stop]).map_err(|_| "codeloop: bad text".to_string())
    }
    fn count(&mut self) -> Result<usize, String> {
        let digits = self.until(b':')?;
        if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return Err("codeloop: bad length".to_string());
        }
        digits.parse().map_err(|_| "codeloop: bad length".to_string())
    }
    pub fn name(&mut self) -> Result<&'a str, String> {
        self.until(b'(')
    }
    pub fn done(&self) -> bool {
        self.at == self.text.len()
    }
}

pub trait Put {
    fn put(&self, out: &mut Vec<u8>);
}

pub trait Get: Sized {
    fn get(input: &mut Reader) -> Result<Self, String>;
}

fn number(out: &mut Vec<u8>, tag: u8, text: String) {
    out.push(tag);
    out.extend_from_slice(text.as_bytes());
    out.push(b';');
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl Put for $t {
            fn put(&self, out: &mut Vec<u8>) { number(out, b'i', self.to_string()) }
        }
        impl Get for $t {
            fn get(input: &mut Reader) -> Result<Self, String> {
                input.expect(b'i')?;
                input.until(b';')?.parse().map_err(|_| "codeloop: bad integer".to_string())
            }
        }
    )*};
}
integers!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

macro_rules! floats {
    ($($t:ty),*) => {$(
        impl Put for $t {
            fn put(&self, out: &mut Vec<u8>) { number(out, b'd', format!("{:?}", self)) }
        }
        impl Get for $t {
            fn get(input: &mut Reader) -> Result<Self, String> {
                input.expect(b'd')?;
                let value: $t = input.until(b';')?.parse().map_err(|_| "codeloop: bad float")?;
                if input.finite && !value.is_finite() {
                    non_finite(value as f64);
                }
                Ok(value)
            }
        }
    )*};
}
floats!(f32, f64);

impl Put for bool {
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(if *self { b"b1" } else { b"b0" });
    }
}
impl Get for bool {
    fn get(input: &mut Reader) -> Result<Self, String> {
        input.expect(b'b')?;
        match input.tag()? {
            b'1' => Ok(true),
            b'0' => Ok(false),
            _ => Err("codeloop: bad bool".to_string()),
        }
    }
}

impl Put for char {
    fn put(&self, out: &mut Vec<u8>) {
        number(out, b'c', (*self as u32).to_string())
    }
}
impl Get for char {
    fn get(input: &mut Reader) -> Result<Self, String> {
        input.expect(b'c')?;
        let code: u32 = input.until(b';')?.parse().map_err(|_| "codeloop: bad char")?;
        char::from_u32(code).ok_or_else(|| "codeloop: bad char".to_string())
    }
}

impl Put for str {
    fn put(&self, out: &mut Vec<u8>) {
        out.push(b's');
        out.extend_from_slice(format!("{}:", self.len()).as_bytes());
        out.extend_from_slice(self.as_bytes());
    }
}
impl Put for String {
    fn put(&self, out: &mut Vec<u8>) {
        self.as_str().put(out)
    }
}
impl Get for String {
    fn get(input: &mut Reader) -> Result<Self, String> {
        input.expect(b's')?;
        let size = input.count()?;
        let end = input.at.checked_add(size).filter(|&end| end <= input.text.len());
        let end = end.ok_or("codeloop: string cut off")?;
        let text = std::str::from_utf8(&input.text[input.at..end]).map_err(|_| "codeloop: bad text")?;
        input.at = end;
        Ok(text.to_string())
    }
}
impl Get for &'static str {
    // A proxy declared to return &str hands the test a string that lives to the end.
    fn get(input: &mut Reader) -> Result<Self, String> {
        Ok(Box::leak(String::get(input)?.into_boxed_str()))
    }
}

impl<T: Put + ?Sized> Put for &T {
    fn put(&self, out: &mut Vec<u8>) {
        (**self).put(out)
    }
}

impl<T: Put> Put for [T] {
    fn put(&self, out: &mut Vec<u8>) {
        out.push(b'l');
        out.extend_from_slice(format!("{}:", self.len()).as_bytes());
        for item in self {
            item.put(out);
        }
    }
}
impl<T: Put> Put for Vec<T> {
    fn put(&self, out: &mut Vec<u8>) {
        self.as_slice().put(out)
    }
}
impl<T: Get> Get for Vec<T> {
    fn get(input: &mut Reader) -> Result<Self, String> {
        input.expect(b'l')?;
        let size = input.count()?;
        let mut items = Vec::new();
        for _ in 0..size {
            items.push(T::get(input)?);
        }
        Ok(items)
    }
}

impl<T: Put> Put for Option<T> {
    fn put(&self, out: &mut Vec<u8>) {
        match self {
            Some(value) => {
                out.push(b'o');
                value.put(out)
            }
            None => out.push(b'n'),
        }
    }
}
impl<T: Get> Get for Option<T> {
    fn get(input: &mut Reader) -> Result<Self, String> {
        match input.tag()? {
            b'o' => Ok(Some(T::get(input)?)),
            b'n' => Ok(None),
            _ => Err("codeloop: value of another type".to_string()),
        }
    }
}

impl Put for () {
    fn put(&self, out: &mut Vec<u8>) {
        out.push(b'n')
    }
}
impl Get for () {
    fn get(input: &mut Reader) -> Result<Self, String> {
        input.expect(b'n')
    }
}

impl<K: Put, V: Put> Put for HashMap<K, V> {
    fn put(&self, out: &mut Vec<u8>) {
        out.push(b'm');
        out.extend_from_slice(format!("{}:", self.len()).as_bytes());
        for (key, value) in self {
            key.put(out);
            value.put(out);
        }
    }
}
impl<K: Get + Eq + Hash, V: Get> Get for HashMap<K, V> {
    fn get(input: &mut Reader) -> Result<Self, String> {
        input.expect(b'm')?;
        let size = input.count()?;
        let mut map = HashMap::new();
        for _ in 0..size {
            let key = K::get(input)?;
            map.insert(key, V::get(input)?);
        }
        Ok(map)
    }
}

macro_rules! tuples {
    ($($n:expr => ($($name:ident),+)),*) => {$(
        impl<$($name: Put),+> Put for ($($name,)+) {
            #[allow(non_snake_case)]
            fn put(&self, out: &mut Vec<u8>) {
                let ($($name,)+) = self;
                out.extend_from_slice(format!("t{}:", $n).as_bytes());
                $($name.put(out);)+
            }
        }
        impl<$($name: Get),+> Get for ($($name,)+) {
            fn get(input: &mut Reader) -> Result<Self, String> {
                input.expect(b't')?;
                if input.count()? != $n {
                    return Err("codeloop: tuple of another size".to_string());
                }
                Ok(($($name::get(input)?,)+))
            }
        }
    )*};
}
tuples!(1 => (A), 2 => (A, B), 3 => (A, B, C), 4 => (A, B, C, D));

macro_rules! any_types {
    ($($t:ty => $name:expr),* $(,)?) => {
        impl Put for dyn Any {
            fn put(&self, out: &mut Vec<u8>) {
                out.push(b'a');
                $(
                    if let Some(value) = self.downcast_ref::<$t>() {
                        out.extend_from_slice(concat!($name, ":").as_bytes());
                        value.put(out);
                        return;
                    }
                )*
                out.extend_from_slice(b"?:");
            }
        }
        impl Get for Box<dyn Any> {
            fn get(input: &mut Reader) -> Result<Self, String> {
                input.expect(b'a')?;
                let name = input.until(b':')?;
                $(
                    if name == $name {
                        let value: $t = Get::get(input)?;
                        return Ok(Box::new(value));
                    }
                )*
                Err("codeloop: a dyn Any of a type that cannot cross".to_string())
            }
        }
    };
}
any_types!(
    i8 => "i8", i16 => "i16", i32 => "i32", i64 => "i64", i128 => "i128", isize => "isize",
    u8 => "u8", u16 => "u16", u32 => "u32", u64 => "u64", u128 => "u128", usize => "usize",
    f32 => "f32", f64 => "f64", bool => "bool", char => "char", () => "()",
    String => "String", &'static str => "&str",
    Vec<Box<dyn Any>> => "Vec<Box<dyn Any>>",
    Vec<i32> => "Vec<i32>", Vec<i64> => "Vec<i64>", Vec<f64> => "Vec<f64>",
    Vec<String> => "Vec<String>",
);
impl Put for Box<dyn Any> {
    fn put(&self, out: &mut Vec<u8>) {
        (**self).put(out)
    }
}

// An enum the solution defines (checked and rebuilt by rustbox): "e" INDEX ":" FIELDS ":"
// then the fields; the Put/Get impls are generated for each such enum.
pub fn put_variant(out: &mut Vec<u8>, index: usize, fields: usize) {
    out.extend_from_slice(format!("e{}:{}:", index, fields).as_bytes());
}
pub fn get_variant(input: &mut Reader) -> Result<(usize, usize), String> {
    input.expect(b'e')?;
    let index = input.count()?;
    Ok((index, input.count()?))
}

fn send(to: &mut File, payload: &[u8]) -> std::io::Result<()> {
    to.write_all(format!("{}\n", payload.len()).as_bytes())?;
    to.write_all(payload)?;
    to.flush()
}

fn receive(from: &mut File) -> Option<Vec<u8>> {
    let mut digits = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        if from.read(&mut byte).ok()? == 0 {
            return None;
        }
        if byte[0] == b'\n' {
            break;
        }
        if !byte[0].is_ascii_digit() || digits.len() > 12 {
            return None;
        }
        digits.push(byte[0]);
    }
    let size: usize = std::str::from_utf8(&digits).ok()?.parse().ok()?;
    if size > (64 << 20) {
        return None;
    }
    let mut payload = vec![0u8; size];
    from.read_exact(&mut payload).ok()?;
    Some(payload)
}

fn open(fd: &str) -> File {
    let fd: i32 = fd.parse().expect("codeloop: bad descriptor");
    // The descriptors were handed to this process for exactly this channel.
    unsafe { File::from_raw_fd(fd) }
}

// --- the solution's side ---------------------------------------------------------------

pub type Handler = fn(&mut Reader) -> Result<Vec<u8>, String>;

pub fn serve(handle: Handler) {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        std::process::exit(2);
    }
    let (mut requests, mut replies) = (open(&args[1]), open(&args[2]));
    if send(&mut replies, b"ready").is_err() {
        return;
    }
    while let Some(request) = receive(&mut requests) {
        let answered = std::panic::catch_unwind(|| handle(&mut Reader::new(&request)));
        let reply = match answered {
            Ok(Ok(value)) => value,
            Ok(Err(error)) => [b"e".as_slice(), error.as_bytes()].concat(),
            Err(_) => b"epanicked".to_vec(),
        };
        if send(&mut replies, &reply).is_err() {
            return;
        }
    }
}

// --- the test's side --------------------------------------------------------------------

static CALLS: AtomicUsize = AtomicUsize::new(0);
static NONCE: OnceLock<String> = OnceLock::new();

// The test's side got NaN or an infinity from the solution: a wrong answer, whatever the
// test's comparison would say (`(x - y).abs() > 1e-4` is false for NaN). The process ends
// with 1, so the nonce is never printed (and no test can catch this as a panic).
fn non_finite(value: f64) -> ! {
    let name = if value.is_nan() { "NaN" } else if value > 0.0 { "Infinity" } else { "-Infinity" };
    let message = format!("the solution returned {} where a finite number is expected\n", name);
    // Not eprintln!: the test harness captures that in a test's thread.
    let _ = std::io::stderr().write_all(message.as_bytes());
    std::process::exit(1);
}

extern "C" {
    // glibc: `function(status, arg)` runs at exit with the exit status.
    fn on_exit(function: extern "C" fn(i32, *mut std::ffi::c_void), arg: *mut std::ffi::c_void) -> i32;
}

extern "C" fn finished(status: i32, _arg: *mut std::ffi::c_void) {
    // Exit status 0: the test harness's main returned, every test passed (a failed test
    // exits with 101, a NaN above with 1, an abort never gets here).
    let nonce = match NONCE.get() {
        Some(nonce) if status == 0 && !nonce.is_empty() => nonce,
        _ => return,
    };
    let suffix = if CALLS.load(Ordering::SeqCst) == 0 { ":vacuous" } else { "" };
    let mut stdout = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(1) });
    let _ = stdout.write_all(format!("\n{}{}\n", nonce, suffix).as_bytes());
}

/// Runs before the test harness's main (an `.init_array` entry of the test's crate):
/// reads the nonce from stdin (the solution's process never sees it) and registers its
/// printing at exit.
pub fn drive() {
    let mut stdin = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(0) });
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 256 && matches!(stdin.read(&mut byte), Ok(1)) && byte[0] != b'\n' {
        line.push(byte[0]);
    }
    let nonce = String::from_utf8_lossy(&line).trim().to_string();
    if NONCE.set(nonce).is_ok() {
        unsafe {
            on_exit(finished, std::ptr::null_mut());
        }
    }
}

struct Channel {
    requests: File,
    replies: File,
}

fn channel() -> &'static Mutex<Channel> {
    static CHANNEL: OnceLock<Mutex<Channel>> = OnceLock::new();
    CHANNEL.get_or_init(|| {
        let descriptor = |name: &str| std::env::var(name).expect("codeloop: no call channel");
        let mut state = Channel {
            requests: open(&descriptor("CODELOOP_REQUESTS")),
            replies: open(&descriptor("CODELOOP_REPLIES")),
        };
        match receive(&mut state.replies) {
            Some(hello) if hello == b"ready" => {}
            _ => panic!("the solution's process ended before answering"),
        }
        Mutex::new(state)
    })
}

pub fn call<R: Get>(name: &str, arguments: impl FnOnce(&mut Vec<u8>)) -> R {
    let mut request = name.as_bytes().to_vec();
    request.push(b'(');
    arguments(&mut request);
    let mut state = channel().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    send(&mut state.requests, &request).expect("the solution's process is gone");
    CALLS.fetch_add(1, Ordering::SeqCst);
    let reply = receive(&mut state.replies).expect("the solution's process ended");
    drop(state);
    match reply.split_first() {
        Some((b'v', value)) => {
            let mut input = Reader::reply(value);
            let result = R::get(&mut input).unwrap_or_else(|error| panic!("{}", error));
            assert!(input.done(), "codeloop: trailing data");
            result
        }
        _ => panic!("the solution raised: {}", String::from_utf8_lossy(&reply[1.min(reply.len())..])),
    }
}
