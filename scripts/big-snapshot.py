import json, os, socket, subprocess, sys, time, threading, base64, urllib.request, tempfile
binary = sys.argv[1]
d = tempfile.mkdtemp(); os.chmod(d, 0o700)
tok = "memtest-token-0123456789abcdef"
p = subprocess.Popen([binary, "serve", "--addr", "127.0.0.1:7931", "--data-dir", d, "--token", tok], stderr=subprocess.DEVNULL)
time.sleep(1.0)
def rss():
    for line in open(f"/proc/{p.pid}/status"):
        if line.startswith("VmRSS"): return int(line.split()[1]) // 1024
def hwm():
    for line in open(f"/proc/{p.pid}/status"):
        if line.startswith("VmHWM"): return int(line.split()[1]) // 1024
opts = [{"label": f"opt {j}", "description": "d" * 1900, "preview": "p" * 19000} for j in range(50)]
for i in range(100):
    body = json.dumps({"id": f"big-{i}", "questions": [{"question": f"Big {i}?", "options": opts}]}).encode()
    if i == 0: print("question body bytes:", len(body))
    r = urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:7931/v1/ask?wait=false", data=body, headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"}))
print("after 100 asks: RSS", rss(), "MiB, peak", hwm())
def tab(out):
    s = socket.create_connection(("127.0.0.1", 7931))
    key = base64.b64encode(os.urandom(16)).decode()
    s.send(f"GET /v1/ui?token={tok} HTTP/1.1\r\nHost: 127.0.0.1:7931\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:7931\r\n\r\n".encode())
    total = 0; s.settimeout(20)
    try:
        while True:
            b = s.recv(1 << 20)
            if not b: break
            total += len(b)
            if total > 100 * 1_000_000 * 1.0: break
    except socket.timeout: pass
    out.append(total); s.close()
out = []
ts = [threading.Thread(target=tab, args=(out,)) for _ in range(5)]
t0 = time.time()
for t in ts: t.start()
peak = 0
while any(t.is_alive() for t in ts):
    peak = max(peak, rss()); time.sleep(0.05)
print("5 tabs got", [round(x/1e6) for x in out], "MB in", round(time.time()-t0,1), "s; sampled peak RSS", peak, "MiB; VmHWM", hwm(), "MiB; after", rss(), "MiB")
p.terminate(); p.wait()
