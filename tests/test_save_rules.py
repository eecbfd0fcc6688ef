"""Where `save` / `--save` / `--json` write: through symbolic links to their targets, never over a
device or FIFO, with the umask's mode, never two outputs on one file; and one display name per
coordinate (a scalar site "b[0]" beside a vector site `b` is refused)."""
import os
import stat

import jax.numpy as jnp
import numpy as np
import pytest

az = pytest.importorskip("arviz")

from inertia.cli import main  # noqa: E402
from inertia.results.store import save  # noqa: E402
from inertia.targets import TargetError, from_logdensity  # noqa: E402

HDF5 = b"\x89HDF\r\n\x1a\n"


@pytest.fixture(scope="module")
def idata():
    return az.from_dict(posterior={"x": np.arange(10.0).reshape(2, 5)})


def test_save_follows_a_symbolic_link_to_its_target(idata, tmp_path):
    real, link = tmp_path / "real.nc", tmp_path / "link.nc"
    real.write_text("old result")
    link.symlink_to(real.name)
    save(idata, link)
    assert link.is_symlink() and os.readlink(link) == real.name  # the link stays a link
    assert real.read_bytes()[:8] == HDF5  # ...and its target holds the new result
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.nc", "real.nc"]  # no leftovers


@pytest.mark.parametrize("make", ["fifo", "device"])
def test_save_refuses_a_non_regular_file(idata, tmp_path, make):
    if make == "fifo":
        path = tmp_path / "pipe.nc"
        os.mkfifo(path)
        kind = "FIFO"
    else:  # a private device node (never a real one: a faulty save would replace it)
        node = _private_null(tmp_path)
        path = tmp_path / "null.nc"
        path.symlink_to(node)  # a device reached through a link is still a device
        kind = "character device"
    with pytest.raises(ValueError, match=f"is a {kind}.*not a regular file"):
        save(idata, path)
    assert not stat.S_ISREG(os.stat(path).st_mode)


def _private_null(folder):
    """A private copy of /dev/null's device node in `folder` (needs root; else the test skips)."""
    node = folder / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    return node


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_saved_file_gets_the_umask_mode(idata, tmp_path, umask):
    old = os.umask(umask)
    try:
        save(idata, tmp_path / "r.nc")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "r.nc").st_mode) == 0o666 & ~umask


@pytest.mark.parametrize("same", ["{d}/r.nc", "{d}/./sub/../r.nc", "{d}/link.nc"])
def test_save_and_json_on_one_file_refused_before_the_run(tmp_path, capsys, same):
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.nc").symlink_to("r.nc")
    rc = main(["sample", "--dim", "3", "--steps", "20", "--quiet", "--save",
               str(tmp_path / "r.nc"), "--json", same.format(d=tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "are the same file" in err and "--save" in err and "--json" in err
    assert not (tmp_path / "r.nc").exists()  # refused before running: nothing written


def test_save_to_a_device_refused_before_the_run(tmp_path, capsys):
    rc = main(["fit", "--model", "gaussian-kappa", "--method", "stl-proj", "--steps", "5",
               "--quiet", "--save", str(_private_null(tmp_path))])
    assert rc == 2 and "character device" in capsys.readouterr().err


def test_duplicate_display_names_refused():
    with pytest.raises(TargetError, match=r"'b' and 'b\[0\]' both give a coordinate named 'b\[0\]'"):
        from_logdensity(lambda p: -p["b"] @ p["b"] - p["b[0]"] ** 2,
                        {"b": jnp.zeros(2), "b[0]": jnp.zeros(())})
    t = from_logdensity(lambda p: -p["b"] @ p["b"] - p["b0"] ** 2,
                        {"b": jnp.zeros(2), "b0": jnp.zeros(())})
    assert t.info["names"] == ["b[0]", "b[1]", "b0"]


def test_duplicate_display_names_refused_numpyro():
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist

    from inertia.targets import from_numpyro

    def model():
        b = numpyro.sample("b", dist.Normal(0.0, 1.0).expand([2]))
        numpyro.deterministic("b[1]", 2.0 * b[0])

    with pytest.raises(TargetError, match=r"'b' and 'b\[1\]'.*rename one"):
        from_numpyro(model)
