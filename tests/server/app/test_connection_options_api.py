"""A configured server reached through its Unix socket (`?socket=` in its DSN, docs/cli.md "Sockets and
TLS") works as a source and as a target: the job reads the binlog over the replication protocol and
the table schemas through the socket, the execution commits through it, and the server list names
the options (never their paths, never the password). Its DSN names port 1, where nothing listens: TCP would fail."""

from __future__ import annotations

from urllib.parse import quote

from tests.support.app import ADMIN, OPERATOR, VIEWER, auth, servers_json, wait_for_execution, wait_for_job


def test_a_server_configured_through_its_socket_is_a_source_and_a_target(make_client, scratch_server):
    scratch_server.run_sql(
        [
            "CREATE DATABASE IF NOT EXISTS sock_api",
            "CREATE OR REPLACE TABLE sock_api.t (id INT PRIMARY KEY, v VARCHAR(20))",
            "INSERT INTO sock_api.t VALUES (1, 'one'), (2, 'two'), (3, 'three')",
        ]
    )
    before = scratch_server.query("CHECKSUM TABLE sock_api.t EXTENDED")
    rng = scratch_server.run_sql(
        ["UPDATE sock_api.t SET v = 'gone' WHERE id < 3", "DELETE FROM sock_api.t WHERE id = 3"]
    )
    options = f"?socket={quote(str(scratch_server.socket_path), safe='/')}"
    dsn = f"mysql://{scratch_server.user}:{scratch_server.password}@localhost:1/{options}"
    client = make_client(servers=servers_json(scratch_server, local=dsn))
    listed = {s["name"]: s for s in client.get("/api/servers", headers=auth(VIEWER)).json()}
    # its options by name: no path on the service host, no password
    assert listed["local"]["options"] == "socket" and listed["local"]["port"] == 1
    assert scratch_server.password not in str(listed) and str(scratch_server.socket_path) not in str(listed)
    body = {
        "server": "local",
        "range": {
            "start_file": rng.start_file,
            "start_position": rng.start_position,
            "stop_file": rng.stop_file,
            "stop_position": rng.stop_position,
        },
    }
    job = wait_for_job(client, client.post("/api/jobs", json=body, headers=auth(OPERATOR)).json()["id"])
    assert job["state"] == "succeeded" and job["statements"] == 3, job
    url = f"/api/jobs/{job['id']}/executions"
    done = wait_for_execution(
        client, client.post(url, json={"target": "local", "dry_run": False}, headers=auth(ADMIN))
    )
    assert done["state"] == "succeeded" and done["committed"] and done["rows_affected"] == 3, done
    assert scratch_server.query("CHECKSUM TABLE sock_api.t EXTENDED") == before
