"""`inertia fit ... | head`: a reader that closes the pipe ends the command quietly."""
import os
import subprocess
import sys

from inertia.cli import EXIT_BROKEN_PIPE


def test_a_closed_pipe_ends_the_command_quietly():
    # the reader closes its end before the report is printed: no "error: Broken pipe", no exit
    # status 2
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.Popen([sys.executable, "-m", "inertia", "fit", "--model", "logistic", "--data",
                          "wdbc", "--steps", "100", "--allow-unconverged"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == EXIT_BROKEN_PIPE == 141
    assert "error" not in err and "Traceback" not in err, err
