"""Bundles as single files: deterministic .tar.gz and .zip archives, read into memory with unsafe members refused."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from eebench.documents import atomic_file, size_text, special_file
from eebench.errors import InputError, near_path, one_of

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")
OTHER_ARCHIVE_SUFFIXES = (".tar.bz2", ".tar.xz", ".tar.zst", ".tar", ".tbz2", ".txz", ".gz", ".bz2", ".xz", ".zst",
                          ".7z", ".rar")
# A fixed time for every member: an archive of the same files is the same bytes whenever it is made.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry
FILE_MODE = 0o644
MAX_UNPACKED_BYTES = 256 << 20  # the main suite is 0.1 MB, 10,000 instances some 30 MB; what is held, and parsed
MAX_MEMBERS = 100_000  # files and folders: 10,000 instances are some 10,000 (empty members cost time and memory)
MAX_HEADER_BYTES = 64 << 10  # a tar's pax or long-name header: a member name is at most some 1,000 characters
# all of them: tarfile parses pax records at some 0.3-0.6 s a MiB (256 MiB of 5-byte records, a 0.3 MB .tar.gz, took
# minutes); 10,000 members of 400-character names hold some 4 MB
MAX_ALL_HEADER_BYTES = 4 << 20


def archive_suffix(path: Path | str) -> str | None:
    """'.tar.gz', '.tgz' or '.zip' when the path names an archive eebench reads and writes, else None."""
    name = Path(path).name.lower()
    return next((s for s in ARCHIVE_SUFFIXES if name.endswith(s)), None)


def other_archive_suffix(path: Path | str) -> str | None:
    """The ending of an archive or compressed file eebench does not write ('.tar', '.tar.xz', '.7z', ...), which
    would otherwise name a folder bundle: `publish --out x.tar` made a folder called x.tar."""
    name = Path(path).name.lower()
    return None if archive_suffix(name) else next((s for s in OTHER_ARCHIVE_SUFFIXES if name.endswith(s)), None)


def member_path(name: str) -> str | None:
    """The relative POSIX path an archive member may be written to, or None when it could leave its folder.

    Refused: absolute paths, drive letters, backslashes (a separator on Windows), '..' parts and NUL bytes.
    Leading './' parts are dropped, as `tar -C DIR .` writes them.
    """
    if not name or "\\" in name or "\x00" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def archive_bytes(files: Mapping[str, bytes], suffix: str) -> bytes:
    """The files as a .tar.gz or .zip: sorted members, fixed times, owners and modes, so equal files give equal bytes.

    The bytes are the same for the same files on one machine; compressors of other zlib builds may differ, which is
    why a bundle's identity is its digest, not its archive's sha256.
    """
    buffer = io.BytesIO()
    if suffix == ".zip":
        with zipfile.ZipFile(buffer, "w") as archive:
            for name in sorted(files):
                info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
                info.create_system = 3  # unix, so the mode below is read as one (the default varies by platform)
                info.external_attr = (stat.S_IFREG | FILE_MODE) << 16
                archive.writestr(info, files[name], compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
        return buffer.getvalue()
    # gzip stores a time and a file name in its header: zero and none
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as compressed, \
            tarfile.open(fileobj=compressed, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(files[name]), 0, FILE_MODE
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            archive.addfile(info, io.BytesIO(files[name]))
    return buffer.getvalue()


def write_archive(path: Path, files: Mapping[str, bytes], *, replace: bool = True) -> None:
    """Write the files as the archive `path` names by its suffix, atomically (`replace`: as atomic_file's)."""
    suffix = archive_suffix(path)
    if suffix is None:
        raise InputError.at(str(path), f"expected a name ending in {one_of(ARCHIVE_SUFFIXES)}")
    data = archive_bytes(files, suffix)
    with atomic_file(path, "wb", replace=replace) as handle:
        handle.write(data)


def read_archive(path: Path) -> dict[str, bytes]:
    """Every regular file of a .tar.gz or .zip, by its member path; nothing is written anywhere.

    An archive with a member that could land outside its folder (see `member_path`), a link, a device or the same
    path twice is refused as a whole.
    """
    suffix = archive_suffix(path)
    if suffix is None:
        raise InputError.at(str(path), f"expected a name ending in {one_of(ARCHIVE_SUFFIXES)}")
    special = special_file(path)
    if special:   # never opened: opening a pipe waits for a writer, and a device may never end
        raise InputError.at(str(path), f"is {special}, expected an archive file")
    try:
        return _read_zip(path) if suffix == ".zip" else _read_tar(path)
    except FileNotFoundError:
        raise InputError.at(str(path), f"no such file{near_path(path)}") from None
    except (OSError, EOFError, zlib.error, tarfile.TarError, zipfile.BadZipFile, NotImplementedError,
            RuntimeError, ValueError) as exc:  # (tarfile reads some pax numbers with a bare int())
        kind = "zip" if suffix == ".zip" else "tar.gz"
        raise InputError.at(str(path), f"not a readable {kind} archive ({exc})") from None


def _read_tar(path: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    folders: set[str] = set()
    # read as it unpacks, never whole: a member or header declaring more than the limit leaves is refused before any
    # of it is read (a 7 MB .tar.gz of 1.5 GiB took 1.08 GB when the limit's worth was unpacked first)
    with gzip.open(path, "rb") as stream:
        unpacking = _Unpacking(stream, path)
        with tarfile.open(fileobj=unpacking, mode="r:", tarinfo=_Header) as archive:  # type: ignore[call-overload]
            for count, member in enumerate(archive, 1):
                if count > MAX_MEMBERS:
                    raise _too_many(path)
                if member.isdir():
                    _checked(path, member.name, files, folders, folder=True)
                    continue
                name = _checked(path, member.name, files, folders)
                if not member.isreg():
                    raise _not_a_file(path, member.name, "a symbolic link" if member.issym() else "a hard link"
                                      if member.islnk() else "a device or special file")
                if member.size > unpacking.room():
                    raise _too_large(path)
                handle = archive.extractfile(member)
                assert handle is not None  # a regular member always has data
                files[name] = handle.read()
            end = archive.offset  # where the end-of-archive blocks start
        # tarfile stops at the end-of-archive block: what follows must be zeros (GNU tar --ignore-zeros would list
        # it; eebench would not see it), and reading to the end checks the gzip CRC and length
        if unpacking.last.strip(b"\0") or not unpacking.zeros_to_end():
            raise InputError.at(str(path), f"holds data after the end-of-archive blocks (from byte {end:,} of the "
                                           "unpacked tar); an archive eebench writes ends there, so this one was "
                                           "changed")
    return files


class _Unpacking:
    """An unpacking tar stream for tarfile, read forward only and never past MAX_UNPACKED_BYTES in all (headers
    too, so countless empty members are refused as well); `last` is the last block tarfile read."""

    def __init__(self, stream: gzip.GzipFile, path: Path) -> None:
        self.stream, self.path, self.last, self.position = stream, path, b"", 0
        self.header_bytes = 0  # of extended headers, counted by _Header

    def room(self) -> int:
        return MAX_UNPACKED_BYTES - self.position

    def tell(self) -> int:
        return self.position

    def read(self, size: int = -1) -> bytes:
        room = MAX_UNPACKED_BYTES - self.position
        if size < 0 or size > room + tarfile.BLOCKSIZE:  # asked for by a header: past the limit, so refused unread
            raise _too_large(self.path)
        self.last = self.stream.read(min(size, room + 1))  # (a header block may be asked for where the tar ends)
        if len(self.last) > room:
            raise _too_large(self.path)
        self.position += len(self.last)
        return self.last

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence != os.SEEK_SET or offset < self.position:
            # tarfile reads a tar front to back: only a negative size (a pax record may give one) leads back
            raise tarfile.ReadError("a member's size or place is out of range")
        while offset > self.position and self.read(min(offset - self.position, 1 << 16)):  # skipped, and counted
            pass
        return self.position

    def zeros_to_end(self) -> bool:
        while piece := self.read(min(1 << 16, self.room() + 1)):
            if piece.strip(b"\0"):
                return False
        return True


class _Header(tarfile.TarInfo):
    """A tar header whose extended headers (pax records, GNU long names) hold at most MAX_HEADER_BYTES each and
    MAX_ALL_HEADER_BYTES in all: tarfile reads one whole and parses its records into a dict, which can take many
    times its size. Global pax headers and sparse members, which eebench never writes, are refused."""

    def _proc_member(self, archive: tarfile.TarFile) -> tarfile.TarInfo:  # (tarfile's documented extension point)
        if self.type == tarfile.XGLTYPE:
            # its records are copied into every later member's that has a pax header: minutes for a 0.9 MB .tar.gz
            raise tarfile.ReadError("a global pax header, which eebench never writes")
        if self.type in _EXTENDED_HEADERS:
            unpacking: _Unpacking = archive.fileobj  # type: ignore[assignment]
            unpacking.header_bytes += max(self.size, 0)
            if self.size > MAX_HEADER_BYTES:
                raise tarfile.ReadError(f"an extended header of {self.size:,} bytes, where at most "
                                        f"{MAX_HEADER_BYTES:,} are read")
            if unpacking.header_bytes > MAX_ALL_HEADER_BYTES:
                raise tarfile.ReadError(f"extended headers of more than {size_text(MAX_ALL_HEADER_BYTES)} in all")
        return super()._proc_member(archive)  # type: ignore[misc]

    def _proc_sparse(self, *args: object) -> tarfile.TarInfo:
        """tarfile's readers of GNU sparse maps (a 'S' member, pax formats 0.0, 0.1 and 1.0), refused before any map
        is read: a sparse member's holes are filled with zeros as it is read, so a few bytes stand for gigabytes
        past the running total (six members of 200 MiB in a 1 KB .tar.gz took 1.4 GB), and a map may be millions
        of numbers."""
        raise tarfile.ReadError("a sparse member, which eebench never writes")

    _proc_gnusparse_00 = _proc_gnusparse_01 = _proc_gnusparse_10 = _proc_sparse


_EXTENDED_HEADERS = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE, tarfile.GNUTYPE_LONGNAME,
                     tarfile.GNUTYPE_LONGLINK)


def _read_zip(path: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    folders: set[str] = set()
    held = 0
    with zipfile.ZipFile(path) as archive:
        _nothing_outside(path, archive)
        if sum(info.file_size for info in archive.infolist()) > MAX_UNPACKED_BYTES:
            raise _too_large(path)
        if len(archive.infolist()) > MAX_MEMBERS:
            raise _too_many(path)
        for info in archive.infolist():
            if info.is_dir():
                _checked(path, info.filename, files, folders, folder=True)
                continue
            name = _checked(path, info.filename, files, folders)
            kind = stat.S_IFMT(info.external_attr >> 16)  # unix file type, when the writer recorded one
            if info.create_system == 3 and kind and kind != stat.S_IFREG:
                raise _not_a_file(path, info.filename, "a symbolic link" if kind == stat.S_IFLNK
                                  else "a device or special file")
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                # zipfile inflates a bzip2 or lzma piece whole, unbounded, before it cuts it to the declared size
                # (337 bytes of bzip2 took 800 MB); eebench writes deflated members
                raise InputError.at(str(path), f"member {info.filename!r} is compressed with "
                                               f"{_ZIP_METHODS.get(info.compress_type, f'method {info.compress_type}')}"
                                               "; archives may hold only stored or deflated members")
            files[name] = _inflated(path, archive, info, MAX_UNPACKED_BYTES - held)
            held += len(files[name])  # a running total: summed afresh per member, 100,000 took minutes
    return files


_ZIP_METHODS = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma"}


def _inflated(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, room: int) -> bytes:
    """A zip member's bytes, read in pieces with a running total against the room left under the limit.

    In pieces because zipfile's read() of a whole member inflates up to 2 GiB at once before it cuts the result
    to the size the member declares: a member declaring 100 bytes took 2.1 GB. Read this way, zipfile stops at the
    declared size and the CRC check refuses the member."""
    parts: list[bytes] = []
    read = 0
    with archive.open(info) as stream:
        while piece := stream.read(1 << 16):
            read += len(piece)
            if read > room:
                raise _too_large(path)
            parts.append(piece)
    return b"".join(parts)


def _too_large(path: Path) -> InputError:
    return InputError.at(str(path), f"unpacks to more than {size_text(MAX_UNPACKED_BYTES)}; a bundle is far smaller, "
                                    "so this is not one (or a damaged one)")


def _too_many(path: Path) -> InputError:
    return InputError.at(str(path), f"holds more than {MAX_MEMBERS:,} files and folders; a bundle holds far fewer, "
                                    "so this is not one (or a damaged one)")


def _not_a_file(path: Path, name: str, what: str) -> InputError:
    return InputError.at(str(path), f"member {name!r} is {what}; archives may hold only files and folders")


def _checked(path: Path, name: str, seen: Mapping[str, bytes], folders: set[str], *, folder: bool = False) -> str:
    """The safe path of a member (see member_path); refused when it could land outside, or when its name was
    given before as a file, or as a folder for a file (a folder `README.md/` before the file `README.md` passed;
    a folder named twice, `a/` and `./a/`, is one folder)."""
    if folder and name.rstrip("/") in ("", "."):
        return ""  # the archive's own top folder, as `tar -C DIR .` writes it
    safe = member_path(name.rstrip("/"))
    if safe is None:
        raise InputError.at(str(path), f"member {name!r} would be written outside the folder it is read into "
                                       "(absolute, '..' or a drive); refused")
    if safe in seen or (safe in folders and not folder):
        raise InputError.at(str(path), f"member {name!r} appears twice")
    if folder:
        folders.add(safe)
    return safe


def write_tree(files: Mapping[str, bytes], target: Path) -> None:
    """Write files read from an archive below `target`, checking again that none resolves outside it."""
    root = target.resolve()
    for name, data in files.items():
        safe = member_path(name)
        destination = (root / safe).resolve() if safe else None
        if destination is None or not destination.is_relative_to(root):
            raise InputError.at(name, "would be written outside the folder it is read into; refused")
        destination.parent.mkdir(parents=True, exist_ok=True)
        with open(destination, "xb") as handle:  # never through an existing file or link
            handle.write(data)
        os.chmod(destination, FILE_MODE)


_END_OF_ZIP = b"PK\x05\x06"   # the end-of-central-directory record: 22 bytes and its comment


def _nothing_outside(path: Path, archive: zipfile.ZipFile) -> None:
    """A zip holds its members, their directory and its end record, and nothing before or after them (zipfile
    reads past such bytes: a member hidden before the first would be read by other tools, as tar's trailing data)."""
    first = min((info.header_offset for info in archive.infolist()), default=archive.start_dir)
    if first:
        raise InputError.at(str(path), f"holds {first:,} bytes before its first member; an archive eebench writes "
                                       "starts with one, so this one was changed")
    size = path.stat().st_size
    with path.open("rb") as handle:
        handle.seek(max(0, size - (22 + 0xFFFF)))
        tail = handle.read()
    at = tail.rfind(_END_OF_ZIP)
    end = at + 22 + int.from_bytes(tail[at + 20:at + 22], "little") if at >= 0 else len(tail)
    if end != len(tail):
        raise InputError.at(str(path), f"holds {len(tail) - end:,} bytes after its end record; an archive eebench "
                                       "writes ends there, so this one was changed")
