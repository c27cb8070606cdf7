"""Replays on local worker processes (provisioner/replay/parallel.py): an invalid object found in a
worker is the same located exit 2 as in one process, not a broken pool's traceback."""
from provisioner.cli import main

from tests.provisioner.replay.replay_builders import base, deployment, nodeclass, nodepool, write, write_trace


def test_invalid_compare_nodeclass_in_a_worker_process_exits_2_as_in_one_process(tmp_path, capsys):
    """The validation verdicts (provisioner.errors.InvalidObjects) did not unpickle in the parent:
    BrokenProcessPool and a traceback with --workers 2."""
    bad = nodeclass()
    del bad["spec"]["securityGroupSelectorTerms"]
    other = write(tmp_path, "other.yaml", bad, nodepool())
    argv = ["replay", "-f", write(tmp_path, "cluster.yaml", *base()), "--trace",
            write_trace(tmp_path, [{"at": "0s", "apply": deployment(replicas=2)}]), "--compare", other]
    assert main([*argv, "--workers", "1"]) == 2
    alone = capsys.readouterr()
    assert main([*argv, "--workers", "2"]) == 2
    pooled = capsys.readouterr()
    assert pooled.err == alone.err
    assert "other.yaml" in pooled.err and "spec.securityGroupSelectorTerms: Required value" in pooled.err
    assert pooled.out == "" and "Traceback" not in pooled.err
