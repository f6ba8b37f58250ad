"""A server left in maintenance at the gateway (an upgrade stopped between drain and ready) fires GatewayServerInMaintenance.

The server is put in maintenance the way the gateway role's entry point drain does, through HAProxy's runtime
socket on the gateway (the Prometheus host here), and set ready again afterwards.
"""

from conftest import EVALUATION_S, GATEWAY_MAINTENANCE_FOR_S, PROM, SCRAPE_S, VLLM, query, sh, wait_for

FIRING = 'ALERTS{alertname="GatewayServerInMaintenance", alertstate="firing"}'
SOCKET = "/run/haproxy/admin.sock"  # kunpeng.vllm.gateway's gateway_runtime_socket
POOLS = ("pool_cpu", "pool_accelerator")  # group_vars/gateway.yml


def runtime(command):
    script = ("import socket, sys\n"
              "s = socket.socket(socket.AF_UNIX)\n"
              f"s.connect({SOCKET!r})\n"
              "s.sendall(sys.argv[1].encode() + b'\\n')\n"
              "print(s.makefile().read())\n")
    return sh(PROM, "python3", "-c", script, command).stdout


def test_a_server_left_in_maintenance_fires_the_alert_and_clears_when_ready():
    assert query(FIRING) == []
    for pool in POOLS:
        runtime(f"disable server {pool}/{VLLM}")
    try:
        maint, _waited = wait_for(lambda: query('haproxy_server_status{job="gateway", state="MAINT"} == 1'), 3 * SCRAPE_S + 5)
        assert sorted((row["metric"]["proxy"], row["metric"]["server"]) for row in maint) == sorted((pool, VLLM) for pool in POOLS)
        bound = GATEWAY_MAINTENANCE_FOR_S + SCRAPE_S + EVALUATION_S + 10
        firing, _waited = wait_for(lambda: query(FIRING), bound, step=0.5)
        assert firing, f"GatewayServerInMaintenance did not fire within {bound} s"
        assert sorted(alert["metric"]["proxy"] for alert in firing) == sorted(POOLS)
        assert {alert["metric"]["server"] for alert in firing} == {VLLM}
    finally:
        for pool in POOLS:
            runtime(f"enable server {pool}/{VLLM}")
    cleared, _waited = wait_for(lambda: query(FIRING) == [], 3 * SCRAPE_S + 3 * EVALUATION_S + 10)
    assert cleared
