import os, sys, time, collections
def snap():
    d = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit(): continue
        try:
            cmd = open(f'/proc/{pid}/cmdline','rb').read()
            if b'java' not in cmd.split(b'\0')[0] or b'TrainWorker' not in cmd and b'train-worker' not in cmd and b'Worker' not in cmd: continue
            for tid in os.listdir(f'/proc/{pid}/task'):
                st = open(f'/proc/{pid}/task/{tid}/stat').read()
                name = st[st.index('(')+1:st.rindex(')')]
                f = st[st.rindex(')')+2:].split()
                cpu = int(f[11]) + int(f[12]); ut=int(f[11])
                s = open(f'/proc/{pid}/task/{tid}/status').read()
                v = int(s.split('voluntary_ctxt_switches:')[1].split()[0]); n = int(s.split('nonvoluntary_ctxt_switches:')[1].split()[0])
                d[(pid, tid)] = (name, cpu, v, n, ut)
        except Exception: pass
    return d
time.sleep(float(sys.argv[1])); a = snap(); t0=time.time(); time.sleep(float(sys.argv[2])); b = snap(); dt=time.time()-t0
agg = collections.defaultdict(lambda: [0,0,0,0,0])
for k,(name,cpu,v,n,ut) in b.items():
    if k in a:
        _,c0,v0,n0,u0 = a[k]
        import re; key = re.sub(r'\d+','#',name)
        g = agg[key]; g[0]+=cpu-c0; g[1]+=v-v0; g[2]+=n-n0; g[3]+=1; g[4]+=ut-u0
print(f'{"thread":28s} {"cpu%":>6s} {"vol/s":>8s} {"invol/s":>8s} n')
for k,g in sorted(agg.items(), key=lambda x:-x[1][0]):
    if g[0]==0 and g[1]+g[2]<dt*5: continue
    print(f'{k:28s} {g[0]/dt:6.1f} user {g[4]/dt:6.1f} {g[1]/dt:8.0f} {g[2]/dt:8.0f} {g[3]}')
