"""Archives of bundles: equal files give equal bytes; reading refuses members that could land outside its folder."""

from __future__ import annotations

import gzip
import io
import re
import stat
import tarfile
import warnings
import zipfile
from pathlib import Path

import pytest

from eebench.archives import archive_bytes, archive_suffix, member_path, read_archive, write_archive, write_tree
from eebench.errors import InputError

FILES = {"manifest.json": b'{"a": 1}\n', "instances/x/seed-0.json": b"{}", "README.md": "naïve\n".encode()}


def exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


@pytest.mark.parametrize("name, suffix", [("b.tar.gz", ".tar.gz"), ("B.TGZ", ".tgz"), ("dir/b.zip", ".zip"),
                                          ("b.tar", None), ("b.gz", None), ("b", None)])
def test_archive_suffixes(name: str, suffix: str | None) -> None:
    assert archive_suffix(name) == suffix


@pytest.mark.parametrize("name, safe", [
    ("manifest.json", "manifest.json"), ("./instances/a.json", "instances/a.json"), ("a//b/./c", "a/b/c"),
    ("a/..b", "a/..b"),  # a name that starts with two dots is still a name
    ("../evil", None), ("a/../../evil", None), ("a/..", None), ("/etc/passwd", None), ("C:/evil", None),
    ("a\\..\\evil", None), ("", None), (".", None), ("a\x00b", None),
])
def test_member_paths(name: str, safe: str | None) -> None:
    assert member_path(name) == safe


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_the_same_files_give_the_same_bytes_and_read_back(suffix: str, tmp_path: Path) -> None:
    first = archive_bytes(FILES, suffix)
    assert archive_bytes(dict(reversed(FILES.items())), suffix) == first  # members sorted, not in given order
    write_archive(tmp_path / f"b{suffix}", FILES)
    assert (tmp_path / f"b{suffix}").read_bytes() == first
    assert read_archive(tmp_path / f"b{suffix}") == FILES
    assert archive_bytes({**FILES, "README.md": b"other"}, suffix) != first


def test_tar_members_carry_no_time_owner_or_machine(tmp_path: Path) -> None:
    data = archive_bytes(FILES, ".tar.gz")
    assert data[4:8] == b"\0\0\0\0"  # gzip header: mtime 0 and, by flags, no file name
    assert data[3] & 0x08 == 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        members = archive.getmembers()
    assert [m.name for m in members] == sorted(FILES)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname, m.mode, m.type) for m in members} == {
        (0, 0, 0, "", "", 0o644, tarfile.REGTYPE)}


def test_zip_members_carry_a_fixed_time_and_mode() -> None:
    with zipfile.ZipFile(io.BytesIO(archive_bytes(FILES, ".zip"))) as archive:
        infos = archive.infolist()
    assert [i.filename for i in infos] == sorted(FILES)
    assert {(i.date_time, i.external_attr >> 16, i.create_system) for i in infos} == {
        ((1980, 1, 1, 0, 0, 0), stat.S_IFREG | 0o644, 3)}


# -- refusals ----------------------------------------------------------------------------------------

def tar_with(path: Path, *members: tuple[tarfile.TarInfo, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            archive.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def info(name: str, kind: bytes = tarfile.REGTYPE, target: str = "") -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.linkname = kind, target
    return member


@pytest.mark.parametrize("member, message", [
    (info("../evil.json"), "member '../evil.json' would be written outside the folder it is read into (absolute, '..' "
                           "or a drive); refused"),
    (info("instances/../../evil.json"), "member 'instances/../../evil.json' would be written outside the folder it "
                                        "is read into (absolute, '..' or a drive); refused"),
    (info("/tmp/evil.json"), "member '/tmp/evil.json' would be written outside the folder it is read into (absolute, "
                             "'..' or a drive); refused"),
    (info("link", tarfile.SYMTYPE, "/etc/passwd"), "member 'link' is a symbolic link; archives may hold only files "
                                                   "and folders"),
    (info("hard", tarfile.LNKTYPE, "manifest.json"), "member 'hard' is a hard link; archives may hold only files and "
                                                     "folders"),
    (info("dev", tarfile.CHRTYPE), "member 'dev' is a device or special file; archives may hold only files and "
                                   "folders"),
    (info("fifo", tarfile.FIFOTYPE), "member 'fifo' is a device or special file; archives may hold only files and "
                                     "folders"),
])
def test_tar_members_that_could_escape_are_refused(tmp_path: Path, member: tarfile.TarInfo, message: str) -> None:
    path = tar_with(tmp_path / "in/b.tar.gz", (info("manifest.json"), b"{}"), (member, b"x"))
    with pytest.raises(InputError, match=exactly(f"{path}: {message}")):
        read_archive(path)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["b.tar.gz", "in"]  # nothing written anywhere


def zip_with(path: Path, *members: tuple[zipfile.ZipInfo | str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a repeated name, which one case writes on purpose
        for member, data in members:
            archive.writestr(member, data)
    return path


def zip_link(name: str) -> zipfile.ZipInfo:
    member = zipfile.ZipInfo(name)
    member.create_system = 3
    member.external_attr = (stat.S_IFLNK | 0o777) << 16
    return member


@pytest.mark.parametrize("member, message", [
    ("../evil.json", "member '../evil.json' would be written outside the folder it is read into (absolute, '..' or "
                     "a drive); refused"),
    ("/abs/evil.json", "member '/abs/evil.json' would be written outside the folder it is read into (absolute, '..' "
                       "or a drive); refused"),
    ("c:/evil.json", "member 'c:/evil.json' would be written outside the folder it is read into (absolute, '..' or a "
                     "drive); refused"),
    (zip_link("link"), "member 'link' is a symbolic link; archives may hold only files and folders"),
    (zipfile.ZipInfo("manifest.json"), "member 'manifest.json' appears twice"),
])
def test_zip_members_that_could_escape_are_refused(tmp_path: Path, member: zipfile.ZipInfo | str,
                                                   message: str) -> None:
    path = zip_with(tmp_path / "b.zip", ("manifest.json", b"{}"), (member, b"/etc/passwd"))
    with pytest.raises(InputError, match=exactly(f"{path}: {message}")):
        read_archive(path)


def test_a_folder_and_a_file_of_one_name_are_a_name_given_twice(tmp_path: Path) -> None:
    """A folder `manifest.json/` before the file `manifest.json` passed (the other order was refused)."""
    path = tar_with(tmp_path / "b.tar.gz", (info("manifest.json/", tarfile.DIRTYPE), b""),
                    (info("manifest.json"), b"{}"))
    with pytest.raises(InputError, match=exactly(f"{path}: member 'manifest.json' appears twice")):
        read_archive(path)
    path = zip_with(tmp_path / "b.zip", ("manifest.json/", b""), ("manifest.json", b"{}"))
    with pytest.raises(InputError, match=exactly(f"{path}: member 'manifest.json' appears twice")):
        read_archive(path)
    path = zip_with(tmp_path / "c.zip", ("manifest.json", b"{}"), ("manifest.json/", b""))
    with pytest.raises(InputError, match=exactly(f"{path}: member 'manifest.json/' appears twice")):
        read_archive(path)
    path = tar_with(tmp_path / "d.tar.gz", (info("a/", tarfile.DIRTYPE), b""), (info("./a/", tarfile.DIRTYPE), b""),
                    (info("a/b.json"), b"1"))
    assert read_archive(path) == {"a/b.json": b"1"}   # a folder named twice is one folder


def test_folders_and_dot_slash_members_are_read(tmp_path: Path) -> None:
    path = tar_with(tmp_path / "b.tar.gz", (info("./", tarfile.DIRTYPE), b""), (info("./a/b.json"), b"1"))
    assert read_archive(path) == {"a/b.json": b"1"}
    path = zip_with(tmp_path / "b.zip", ("a/", b""), ("a/b.json", b"1"))
    assert read_archive(path) == {"a/b.json": b"1"}


@pytest.mark.parametrize("name, data, kind", [("b.tar.gz", b"not gzip", "tar.gz"), ("b.zip", b"not zip", "zip"),
                                             ("b.tgz", gzip.compress(b"not a tar", mtime=0), "tar.gz")],
                         ids=["not-gzip", "not-zip", "gzip-not-tar"])
def test_unreadable_archives(tmp_path: Path, name: str, data: bytes, kind: str) -> None:
    (tmp_path / name).write_bytes(data)
    with pytest.raises(InputError, match=re.escape(f"{tmp_path / name}: not a readable {kind} archive (")):
        read_archive(tmp_path / name)


def test_the_gzip_checksum_is_checked(tmp_path: Path) -> None:
    broken = bytearray(archive_bytes(FILES, ".tar.gz"))
    broken[-8] ^= 0x01  # the CRC of the gzip trailer, past the end of the tar: read only if the whole stream is
    (tmp_path / "b.tar.gz").write_bytes(bytes(broken))
    with pytest.raises(InputError, match=re.escape(f"{tmp_path / 'b.tar.gz'}: not a readable tar.gz archive (CRC")):
        read_archive(tmp_path / "b.tar.gz")


def test_write_tree_never_writes_outside_its_target(tmp_path: Path) -> None:
    target = tmp_path / "t"
    target.mkdir()
    for name in ("../evil", "/abs/evil", "a/../../evil"):
        with pytest.raises(InputError, match=exactly(f"{name}: would be written outside the folder it is read into; "
                                                     "refused")):
            write_tree({name: b"x"}, target)
    (tmp_path / "elsewhere").mkdir()
    (target / "a").symlink_to(tmp_path / "elsewhere")  # a link planted in the target is not followed out of it
    with pytest.raises(InputError, match=exactly("a/evil: would be written outside the folder it is read into; "
                                                 "refused")):
        write_tree({"a/evil": b"x"}, target)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a", "elsewhere", "t"]
    write_tree(FILES, target / "ok")
    assert {p.relative_to(target / "ok").as_posix(): p.read_bytes() for p in (target / "ok").rglob("*")
            if p.is_file()} == FILES


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_an_archive_that_unpacks_too_large_is_refused_unread(suffix: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import eebench.archives
    path = tmp_path / f"bomb{suffix}"
    write_archive(path, {"manifest.json": b"{}", "zeros.bin": bytes(5000)})
    assert read_archive(path)["zeros.bin"] == bytes(5000)
    monkeypatch.setattr(eebench.archives, "MAX_UNPACKED_BYTES", 4096)
    with pytest.raises(InputError, match=exactly(f"{path}: unpacks to more than 4,096 bytes; a bundle is far smaller, "
                                                 "so this is not one (or a damaged one)")):
        read_archive(path)


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_an_archive_of_too_many_members_is_refused(suffix: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Empty members unpack to little but cost time and memory each (200,000 in a 0.9 MB .tar.gz took 14 s)."""
    import eebench.archives
    path = tmp_path / f"many{suffix}"
    write_archive(path, {**FILES, "other.json": b""})
    monkeypatch.setattr(eebench.archives, "MAX_MEMBERS", 4)
    assert read_archive(path)["other.json"] == b""
    monkeypatch.setattr(eebench.archives, "MAX_MEMBERS", 3)
    with pytest.raises(InputError, match=exactly(f"{path}: holds more than 3 files and folders; a bundle holds far "
                                                 "fewer, so this is not one (or a damaged one)")):
        read_archive(path)


def test_a_zip_with_bytes_before_or_after_its_records_is_refused(tmp_path: Path) -> None:
    """zipfile reads past them; another tool might read a member hidden there (the zip side of tar's trailing data)."""
    written = archive_bytes(FILES, ".zip")
    hidden = io.BytesIO()
    with zipfile.ZipFile(hidden, "w") as archive:
        archive.writestr(next(iter(FILES)), b"something else")
    before = tmp_path / "before.zip"
    before.write_bytes(hidden.getvalue() + written)
    with pytest.raises(InputError, match=rf"^{re.escape(str(before))}: holds {len(hidden.getvalue()):,} bytes before "
                                         "its first member"):
        read_archive(before)
    after = tmp_path / "after.zip"
    after.write_bytes(written + b"garbage\n")
    with pytest.raises(InputError, match=rf"^{re.escape(str(after))}: holds 8 bytes after its end record"):
        read_archive(after)


def sparse_tar(path: Path, kind: str) -> Path:
    """A .tar.gz of a GNU sparse member: old GNU 'S', or a pax 0.1 or 1.0 sparse map (tarfile writes none itself)."""
    with tarfile.open(path, "w:gz", format=tarfile.GNU_FORMAT if kind == "S" else tarfile.PAX_FORMAT) as archive:
        member = info("manifest.json", tarfile.GNUTYPE_SPARSE if kind == "S" else tarfile.REGTYPE)
        data = b"1\n0\n1\nx" if kind == "1.0" else b"x"
        member.pax_headers = {"0.1": {"GNU.sparse.map": "0,1", "GNU.sparse.realsize": str(200 << 20)},
                              "1.0": {"GNU.sparse.major": "1", "GNU.sparse.minor": "0"}}.get(kind, {})
        member.size = len(data)
        archive.addfile(member, io.BytesIO(data))
    return path


@pytest.mark.parametrize("kind", ["S", "0.1", "1.0"])
def test_sparse_tar_members_are_refused_before_their_map_is_read(kind: str, tmp_path: Path) -> None:
    """Their holes are zeros filled in as they are read, past the running total: six members of 200 MiB in a 1 KB
    .tar.gz took 1.4 GB, and a malformed map ended in a ValueError traceback."""
    path = sparse_tar(tmp_path / "b.tar.gz", kind)
    with pytest.raises(InputError, match=exactly(f"{path}: not a readable tar.gz archive (a sparse member, which "
                                                 "eebench never writes)")):
        read_archive(path)


def test_a_global_pax_header_is_refused(tmp_path: Path) -> None:
    """Its records are copied into every later member's with a pax header: a 0.9 MB .tar.gz took minutes and 3 GB."""
    path = tmp_path / "b.tar.gz"
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": "x"}) as archive:
        archive.addfile(info("manifest.json"), io.BytesIO())
    with pytest.raises(InputError, match=exactly(f"{path}: not a readable tar.gz archive (a global pax header, which "
                                                 "eebench never writes)")):
        read_archive(path)


def test_tar_extended_headers_are_limited_in_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each under its own limit, but tarfile parses pax records at some 0.5 s a MiB: 256 MiB of them took minutes."""
    import eebench.archives
    files = {f"{'x' * 150}{i}.json": b"" for i in range(3)}  # a pax header of some 170 bytes each
    path = tmp_path / "b.tar.gz"
    write_archive(path, files)
    monkeypatch.setattr(eebench.archives, "MAX_ALL_HEADER_BYTES", 600)
    assert read_archive(path) == files
    monkeypatch.setattr(eebench.archives, "MAX_ALL_HEADER_BYTES", 400)
    with pytest.raises(InputError, match=exactly(f"{path}: not a readable tar.gz archive (extended headers of more "
                                                 "than 400 bytes in all)")):
        read_archive(path)


def test_a_malformed_pax_number_is_one_line(tmp_path: Path) -> None:
    """tarfile reads GNU.sparse.realsize with a bare int(): a ValueError traceback."""
    path = tmp_path / "b.tar.gz"
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as archive:
        member = info("manifest.json")
        member.pax_headers = {"GNU.sparse.realsize": "abc"}
        archive.addfile(member, io.BytesIO())
    with pytest.raises(InputError, match=exactly(f"{path}: not a readable tar.gz archive (invalid literal for int() "
                                                 "with base 10: 'abc')")):
        read_archive(path)


@pytest.mark.parametrize("method, says", [(zipfile.ZIP_BZIP2, "bzip2"), (zipfile.ZIP_LZMA, "lzma")])
def test_zip_members_neither_stored_nor_deflated_are_refused(method: int, says: str, tmp_path: Path) -> None:
    """zipfile inflates a bzip2 or lzma piece whole before cutting it to the declared size: 337 bytes took 800 MB."""
    path = zip_with(tmp_path / "b.zip", ("manifest.json", b"{}"))
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("README.md", b"x", compress_type=method)
    with pytest.raises(InputError, match=exactly(f"{path}: member 'README.md' is compressed with {says}; archives may "
                                                 "hold only stored or deflated members")):
        read_archive(path)
    stored = zip_with(tmp_path / "s.zip", ("manifest.json", b"{}"))  # zipfile's default: stored
    assert read_archive(stored) == {"manifest.json": b"{}"}
