#!/usr/bin/python3
"""crashfs — a FUSE file system that can forget what was never fsync'ed.

    /usr/bin/python3 crashfs.py BACKING MOUNTPOINT

mounts BACKING at MOUNTPOINT (passthrough: every operation goes to the file
under BACKING at once, so reads, mmap and the page cache behave as on any
disk) and keeps, for every file, an undo log of the data written since that
file's last fsync/fdatasync (or write through an O_SYNC/O_DSYNC descriptor):
the old bytes of every written range and the size before the first write or
truncate. fsync on the file empties its log.

"Power loss" = unmount (umount MOUNTPOINT, after the programs using it are
killed): the logs are applied in reverse order, so every file goes back to
exactly what it held at its last fsync — what the kernel would have lost had
the machine lost power. The process prints one line

    dropped <bytes> bytes in <n> writes of <files> files

(bytes written since the files' last fsync; writes = overwritten ranges
restored)

and exits 0.

The model (stated in the test that uses it): file DATA not fsync'ed is lost;
METADATA (create, rename, unlink, mkdir) is durable at once, as if every
directory were fsync'ed right away. It tests "an acknowledged write was
fsync'ed before the reply", not a file system's ordering of metadata.

Python's fusepy over libfuse2 (Debian: python3-fusepy); needs /dev/fuse and
root (or fusermount). Single-threaded: one operation at a time.
"""

import errno
import os
import sys

from fusepy import FUSE, FuseOSError, Operations


class CrashFS(Operations):
    def __init__(self, root):
        self.root = os.path.realpath(root)
        # inode of the backing file -> {"size": size before the first
        # unsynced change, "undo": [(offset, old bytes)] in write order}
        self.logs = {}
        self.fd_ino = {}          # our fh -> backing inode

    # -- helpers
    def _full(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def _log(self, fh):
        ino = self.fd_ino[fh]
        lg = self.logs.get(ino)
        if lg is None:
            lg = self.logs[ino] = {"size": os.fstat(fh).st_size, "undo": [], "written": 0}
        return ino, lg

    def _synced(self, fh):
        self.logs.pop(self.fd_ino.get(fh), None)

    # -- power loss
    def destroy(self, path):
        nbytes = nwrites = nfiles = 0
        for ino, lg in self.logs.items():
            target = self._path_of(ino)
            if target is None:
                continue            # unlinked since: nothing to restore
            nbytes += lg["written"]
            fd = os.open(target, os.O_WRONLY)
            try:
                for off, old in reversed(lg["undo"]):
                    os.pwrite(fd, old, off)
                nwrites += len(lg["undo"])
                os.ftruncate(fd, lg["size"])
                nfiles += 1
            finally:
                os.close(fd)
        self.logs.clear()
        sys.stdout.write("dropped %d bytes in %d writes of %d files\n" % (nbytes, nwrites, nfiles))
        sys.stdout.flush()

    def _path_of(self, ino):
        for d, _, files in os.walk(self.root):
            for f in files:
                p = os.path.join(d, f)
                try:
                    if os.lstat(p).st_ino == ino:
                        return p
                except OSError:
                    pass
        return None

    # -- metadata (durable at once)
    def access(self, path, mode):
        if not os.access(self._full(path), mode):
            raise FuseOSError(errno.EACCES)

    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._full(path))
        except OSError as e:
            raise FuseOSError(e.errno)
        return {k: getattr(st, k) for k in ("st_atime", "st_ctime", "st_gid", "st_mode",
                                              "st_mtime", "st_nlink", "st_size", "st_uid")}

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._full(path))

    def mkdir(self, path, mode):
        os.mkdir(self._full(path), mode)

    def rmdir(self, path):
        os.rmdir(self._full(path))

    def _forget(self, full):
        """full is about to lose a name: a file with no name left has no
        data to restore (and its inode number may be reused)."""
        try:
            st = os.lstat(full)
        except OSError:
            return
        if st.st_nlink <= 1:
            self.logs.pop(st.st_ino, None)

    def unlink(self, path):
        self._forget(self._full(path))
        os.unlink(self._full(path))

    def rename(self, old, new):
        self._forget(self._full(new))
        os.rename(self._full(old), self._full(new))

    def chmod(self, path, mode):
        os.chmod(self._full(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._full(path), uid, gid)

    def utimens(self, path, times=None):
        os.utime(self._full(path), times)

    def statfs(self, path):
        st = os.statvfs(self._full(path))
        return {k: getattr(st, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                              "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    # -- files
    def open(self, path, flags):
        flags &= ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC)
        if flags & os.O_ACCMODE == os.O_WRONLY:
            flags = (flags & ~os.O_ACCMODE) | os.O_RDWR     # to read the old bytes it overwrites
        fd = os.open(self._full(path), flags)
        self.fd_ino[fd] = os.fstat(fd).st_ino
        return fd

    def create(self, path, mode, fi=None):
        fd = os.open(self._full(path), os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)
        self.fd_ino[fd] = os.fstat(fd).st_ino
        self.logs.pop(self.fd_ino[fd], None)      # a new file (or one truncated to 0: durable)
        return fd

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        ino, lg = self._log(fh)
        cur = os.fstat(fh).st_size
        if offset < cur:
            lg["undo"].append((offset, os.pread(fh, min(len(data), cur - offset), offset)))
        n = os.pwrite(fh, data, offset)
        lg["written"] += n
        if _fl(fh) & (os.O_SYNC | os.O_DSYNC):
            # a synchronous descriptor: THIS range is on disk when write
            # returns (not the file's other unsynced writes)
            self._durable_range(lg, offset, n)
        return n

    @staticmethod
    def _durable_range(lg, off, n):
        """Make [off, off+n) durable: the undo entries no longer restore it
        (an entry overlapping it is cut; the old size is raised to cover it)."""
        end = off + n
        kept = []
        for o, old in lg["undo"]:
            e = o + len(old)
            if e <= off or o >= end:
                kept.append((o, old))
                continue
            if o < off:
                kept.append((o, old[:off - o]))
            if e > end:
                kept.append((end, old[end - o:]))
        lg["undo"] = kept
        if lg["size"] < end:
            # the durable range lies past the old end: keep the file that long
            # (the bytes between the old end and off stay what they were)
            lg["size"] = end

    def truncate(self, path, length, fh=None):
        if fh is not None:
            ino, lg = self._log(fh)
            cur = os.fstat(fh).st_size
            if length < cur:
                lg["undo"].append((length, os.pread(fh, cur - length, length)))
            os.ftruncate(fh, length)
            return
        fd = os.open(self._full(path), os.O_RDWR)
        try:
            self.fd_ino[fd] = os.fstat(fd).st_ino
            self.truncate(path, length, fd)
        finally:
            self.fd_ino.pop(fd, None)
            os.close(fd)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        self.fd_ino.pop(fh, None)
        os.close(fh)
        return 0

    def fsync(self, path, datasync, fh):
        # (the backing disk's own durability is not the question here)
        self._synced(fh)
        return 0

    def fsyncdir(self, path, datasync, fh):
        return 0


def _fl(fd):
    import fcntl
    return fcntl.fcntl(fd, fcntl.F_GETFL)


if __name__ == "__main__":
    backing, mnt = sys.argv[1], sys.argv[2]
    sys.stdout.write("mounting\n")
    sys.stdout.flush()
    FUSE(CrashFS(backing), mnt, foreground=True, nothreads=True, default_permissions=False)
