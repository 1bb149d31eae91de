"""`bench cluster up | status | down | worker`: scale-out on Dagster's Celery executor (docs/scale-out.md)."""

from __future__ import annotations

import argparse
import json

from bench_assets.cli.common import fail
from resources.paths import bench_home_path


def cmd_up(args: argparse.Namespace) -> int:
    from bench_assets.platform.cluster.lifecycle import AlreadyUp, cluster_up
    from bench_assets.platform.cluster.servers import ClusterError

    home = bench_home_path()
    try:
        state = cluster_up(home, args.workers, args.lanes_per_worker,
                          ports={"postgres": args.postgres_port, "redis": args.redis_port,
                                 "webserver": args.webserver_port, "code-server": args.code_server_port},
                          listen=args.listen, allow=args.allow, ui_host=args.ui, max_runs=args.max_runs,
                          tls={"cert": args.tls_cert, "key": args.tls_key, "ca": args.tls_ca} if args.tls_cert
                          else None)
    except AlreadyUp as exc:
        print(f"bench: {exc}")
        return 0
    except ClusterError as exc:
        return fail(str(exc), 1)
    print(f"cluster up under {home}/cluster (code {state.code_hash}):")
    print(f"  PostgreSQL  {state.postgres_url}  (pid {state.servers['postgres'].pid}; clients from "
          f"{', '.join(state.allow)}, by password)")
    print(f"  Redis       {state.broker_url}  (pid {state.servers['redis'].pid}; password required)")
    print(f"  credentials {home}/cluster/secrets.env (owner-only; `bench cluster rotate-secrets` replaces them)")
    print(f"  code server 127.0.0.1:{state.code_server_port}  (pid {state.servers['code-server'].pid}; the daemon and "
          "the webserver load the code from it)")
    print(f"  daemon      pid {state.servers['daemon'].pid}, log {state.servers['daemon'].log}")
    print(f"  webserver   http://{state.ui_host}:{state.webserver_port}  (pid {state.servers['webserver'].pid})")
    for w in state.workers:
        print(f"  worker {w.name}: {w.lanes} lane(s), queues {','.join(w.queues)}, pid {w.proc.pid if w.proc else '?'}"
              f", log {w.proc.log if w.proc else '?'}")
    print("`bench campaign ...` and `bench train ...` now run on the workers; "
          "`bench cluster status` shows them, `bench cluster down` stops everything listed here.")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from bench_assets.platform.cluster.lifecycle import cluster_status

    status = cluster_status(bench_home_path())
    if args.json:
        print(json.dumps(status, indent=1))
        return 0
    if not status["up"]:
        print(f"no cluster is up under {status['home']} (`bench cluster up --workers N` starts one)")
        return 0
    print(f"cluster under {status['home']}/cluster, code {status['code_hash']}, {status['lanes']} lane(s), "
          f"UI {status['webserver']}")
    for s in status["servers"]:
        print(f"  {s['name']:10s} pid {s['pid']:>7}  {'alive' if s['alive'] else 'DEAD'}")
    for w in status["workers"]:
        beat = "never" if w["heartbeat_age_s"] is None else f"{w['heartbeat_age_s']:.0f}s ago"
        print(f"  worker {w['name']:6s} pid {w['pid']!s:>7}  {'alive' if w['alive'] else 'DEAD'}  queue {w['queue']}, "
              f"{w['lanes']} lane(s), heartbeat {beat}, steps running {w['steps_running']}, done {w['steps_done']}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from bench_assets.platform.cluster.lifecycle import cluster_down

    cluster_down(bench_home_path())
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from bench_assets.platform.cluster.lifecycle import run_worker
    from bench_assets.platform.cluster.servers import ClusterError

    try:
        return run_worker(bench_home_path(), args.name, args.lanes)
    except ClusterError as exc:
        return fail(str(exc), 1)


def cmd_join(args: argparse.Namespace) -> int:
    from bench_assets.platform.cluster.lifecycle import join
    from bench_assets.platform.cluster.servers import ClusterError

    try:
        return join(bench_home_path(), args.head, args.name, args.lanes)
    except ClusterError as exc:
        return fail(str(exc), 1)


def cmd_rotate(args: argparse.Namespace) -> int:
    from bench_assets.platform.cluster.lifecycle import rotate_secrets
    from bench_assets.platform.cluster.servers import ClusterError

    try:
        rotate_secrets(bench_home_path(), force=args.force)
    except ClusterError as exc:
        return fail(str(exc), 1)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    cl = sub.add_parser("cluster", help="scale out: PostgreSQL + Redis + code server + daemon + Celery workers "
                                        "(docs/scale-out.md)").add_subparsers(dest="cluster_command", required=True)
    up = cl.add_parser("up", help="start the servers and N workers on this machine (loopback unless --listen)")
    up.add_argument("--workers", type=int, default=2, help="local workers; 0: the servers alone (a head box)")
    up.add_argument("--lanes-per-worker", type=int, default=1)
    up.add_argument("--listen", default="127.0.0.1", metavar="ADDR[/PREFIX][,...]",
                    help="where PostgreSQL and Redis listen (default loopback); an address with its prefix "
                         "(10.0.0.5/24) also lets that network's boxes in")
    up.add_argument("--allow", default="", metavar="CIDR[,...]", help="more networks PostgreSQL accepts")
    up.add_argument("--ui", default="127.0.0.1", metavar="ADDR",
                    help="the webserver's address (default loopback: the UI has no authentication)")
    up.add_argument("--tls-cert", default=None, metavar="PEM", help="TLS for PostgreSQL and Redis: the server "
                                                                     "certificate (with --tls-key)")
    up.add_argument("--tls-key", default=None, metavar="PEM")
    up.add_argument("--tls-ca", default=None, metavar="PEM", help="the CA clients check the certificate against "
                                                                 "(default: the certificate, self-signed)")
    up.add_argument("--max-runs", type=int, default=0, help="runs at once (default: the local lanes + 1; raise it "
                                                            "for the lanes workers will join with)")
    for name in ("postgres", "redis", "webserver", "code-server"):
        up.add_argument(f"--{name}-port", type=int, default=0, help="default: a free port, printed")
    up.set_defaults(fn=cmd_up)
    st = cl.add_parser("status", help="servers and workers: pid, alive, queue, lanes, steps running/done")
    st.add_argument("--json", action="store_true")
    st.set_defaults(fn=cmd_status)
    cl.add_parser("down", help="stop everything `bench cluster up` started").set_defaults(fn=cmd_down)
    wk = cl.add_parser("worker", help="run this box's Celery worker (a GPU box of a real cluster)")
    wk.add_argument("--name", required=True, help="the box's name: also its own queue")
    wk.add_argument("--lanes", type=int, default=1, help="concurrent steps: BENCH_GPUS x BENCH_JOBS_PER_GPU")
    wk.set_defaults(fn=cmd_worker)
    jn = cl.add_parser("join", help="on another box: check the shared home, code, broker and database, then run "
                                    "this box's worker")
    jn.add_argument("--head", default=None, help="the head box's address as this box reaches it (default: the "
                                                 "first --listen address)")
    jn.add_argument("--name", required=True, help="this box's name: also its own queue")
    jn.add_argument("--lanes", type=int, default=1, help="concurrent steps: BENCH_GPUS x BENCH_JOBS_PER_GPU")
    jn.set_defaults(fn=cmd_join)
    rs = cl.add_parser("rotate-secrets", help="new PostgreSQL and Redis passwords; the head's processes restart, "
                                              "joined workers restart themselves")
    rs.add_argument("--force", action="store_true", help="even while steps run (they may fail)")
    rs.set_defaults(fn=cmd_rotate)
