//! Where the served disk's data lives: a sparse backing file, or sparse memory
//! with a limit. Never-written ranges read as zeroes in both.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

/// Why a store operation failed, as an NBD error.
#[derive(Debug)]
pub enum StoreError {
    /// Out of room (the memory limit): `ENOSPC`.
    NoSpace,
    /// The backing file failed: `EIO`.
    Io,
}

/// The data of the export.
pub trait Store: Send + Sync {
    /// Fill `buf` from `offset`.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StoreError>;
    /// Write `data` at `offset`.
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), StoreError>;
    /// Make `len` bytes at `offset` read as zeroes; with `punch` the range may stop
    /// taking room (a hole).
    fn zero(&self, offset: u64, len: u64, punch: bool) -> Result<(), StoreError>;
    /// Make every completed write durable (the backing file's `fdatasync`).
    fn flush(&self) -> Result<(), StoreError>;
}

/// Page size of the memory store.
const PAGE: u64 = 4096;

/// Sparse memory: 4 KiB pages allocated on first write, at most `limit` bytes.
pub struct MemStore {
    pages: Mutex<HashMap<u64, Box<[u8]>>>,
    max_pages: usize,
}

impl MemStore {
    /// An empty store holding at most `limit` bytes of written data.
    pub fn new(limit: u64) -> MemStore {
        MemStore {
            pages: Mutex::new(HashMap::new()),
            max_pages: (limit / PAGE) as usize,
        }
    }
}

/// The pieces of `[offset, offset + len)` in pages: (page, offset in page, length).
fn pieces(offset: u64, len: u64) -> impl Iterator<Item = (u64, usize, usize)> {
    let end = offset + len;
    let mut at = offset;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let page = at / PAGE;
        let off = (at % PAGE) as usize;
        let n = (PAGE as usize - off).min((end - at) as usize);
        at += n as u64;
        Some((page, off, n))
    })
}

impl Store for MemStore {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StoreError> {
        let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        let mut done = 0;
        for (p, off, n) in pieces(offset, buf.len() as u64) {
            let dst = &mut buf[done..done + n];
            match pages.get(&p) {
                Some(pg) => dst.copy_from_slice(&pg[off..off + n]),
                None => dst.fill(0),
            }
            done += n;
        }
        Ok(())
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), StoreError> {
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        let new = pieces(offset, data.len() as u64)
            .filter(|(p, _, _)| !pages.contains_key(p))
            .count();
        if pages.len() + new > self.max_pages {
            return Err(StoreError::NoSpace);
        }
        let mut done = 0;
        for (p, off, n) in pieces(offset, data.len() as u64) {
            let pg = pages
                .entry(p)
                .or_insert_with(|| vec![0u8; PAGE as usize].into_boxed_slice());
            pg[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
        Ok(())
    }

    fn zero(&self, offset: u64, len: u64, _punch: bool) -> Result<(), StoreError> {
        // Zeroes take no room here either way: whole pages go, partial ones are
        // cleared.
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        for (p, off, n) in pieces(offset, len) {
            if n == PAGE as usize {
                pages.remove(&p);
            } else if let Some(pg) = pages.get_mut(&p) {
                pg[off..off + n].fill(0);
            }
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// A backing file, kept sparse: never-written ranges are holes.
pub struct FileStore {
    file: File,
}

impl FileStore {
    /// Open (or create) `path` and make it at least `size` bytes long (a hole).
    pub fn open(path: &std::path::Path, size: u64) -> std::io::Result<FileStore> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        if file.metadata()?.len() < size {
            file.set_len(size)?;
        }
        Ok(FileStore { file })
    }
}

impl Store for FileStore {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StoreError> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|_| StoreError::Io)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), StoreError> {
        self.file.write_all_at(data, offset).map_err(|e| {
            if e.raw_os_error() == Some(libc::ENOSPC) || e.raw_os_error() == Some(libc::EDQUOT) {
                StoreError::NoSpace
            } else {
                StoreError::Io
            }
        })
    }

    fn zero(&self, offset: u64, len: u64, punch: bool) -> Result<(), StoreError> {
        use std::os::fd::AsRawFd;
        let mode = if punch {
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE
        } else {
            libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE
        };
        // SAFETY: fallocate on a file descriptor this store owns; no memory is passed.
        let r = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                mode,
                offset as libc::off_t,
                len as libc::off_t,
            )
        };
        if r == 0 {
            return Ok(());
        }
        // A file system without hole punching: write the zeroes.
        let zeroes = vec![0u8; len.min(1 << 20) as usize];
        let mut at = offset;
        while at < offset + len {
            let n = (offset + len - at).min(zeroes.len() as u64) as usize;
            self.write_at(at, &zeroes[..n])?;
            at += n as u64;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.file.sync_data().map_err(|_| StoreError::Io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(s: &dyn Store) {
        let mut b = vec![1u8; 10_000];
        s.read_at(1000, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 0), "never written reads as zeroes");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        s.write_at(1000, &data).unwrap();
        s.read_at(1000, &mut b).unwrap();
        assert_eq!(b, data);
        // Zero a range across a page boundary, inside the written data.
        s.zero(4000, 5000, true).unwrap();
        s.read_at(1000, &mut b).unwrap();
        for (i, &x) in b.iter().enumerate() {
            let at = 1000 + i as u64;
            let want = if (4000..9000).contains(&at) {
                0
            } else {
                data[i]
            };
            assert_eq!(x, want, "byte {at}");
        }
        s.flush().unwrap();
    }

    #[test]
    fn memory_store_keeps_data_and_zeroes() {
        check(&MemStore::new(1 << 20));
    }

    #[test]
    fn file_store_keeps_data_and_zeroes() {
        let dir = std::env::temp_dir().join(format!("iosched-store-{}", std::process::id()));
        let s = FileStore::open(&dir, 1 << 20).unwrap();
        check(&s);
        drop(s);
        let _ = std::fs::remove_file(&dir);
    }

    #[test]
    fn memory_store_refuses_past_its_limit() {
        let s = MemStore::new(2 * PAGE);
        s.write_at(0, &[1u8; 8192]).unwrap();
        assert!(matches!(s.write_at(8192, &[1]), Err(StoreError::NoSpace)));
        // Overwriting allocated pages still works.
        s.write_at(100, &[2u8; 100]).unwrap();
    }
}
