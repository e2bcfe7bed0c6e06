"""The facts of the machine a JVM filter benchmark runs on, as its summary states them.

run.sh records them when a run starts: python3 machine_facts.py > machine.json"""

import json
import os
import platform
import subprocess


def read(path):
    with open(path) as f:
        return f.read()


def machine_facts(jmh_entries):
    facts = {}
    try:
        for line in read("/proc/cpuinfo").splitlines():
            if line.startswith("model name"):
                facts["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        facts["cpu_model"] = platform.processor() or None
    facts["logical_cpus"] = os.cpu_count()
    try:
        for line in read("/proc/meminfo").splitlines():
            if line.startswith("MemTotal:"):
                kb = int(line.split()[1])
                facts["memory_total_gib"] = round(kb / 1024 / 1024, 1)
    except OSError:
        pass
    try:
        for line in read("/etc/os-release").splitlines():
            if line.startswith("PRETTY_NAME="):
                facts["os"] = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        facts["os"] = platform.system()
    facts["kernel"] = platform.release()
    facts["architecture"] = platform.machine()
    try:
        virt = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True, timeout=5).stdout.strip()
        facts["virtualization"] = virt or None
    except (OSError, subprocess.SubprocessError):
        pass
    if jmh_entries:
        e = jmh_entries[0]
        facts["jvm"] = "{} {} (JDK {})".format(e.get("vmName"), e.get("vmVersion"), e.get("jdkVersion"))
        facts["jvm_path"] = e.get("jvm")
    else:
        try:
            out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30).stderr.strip()
            facts["jvm"] = out.splitlines()[-1] if out else None
        except (OSError, subprocess.SubprocessError):
            facts["jvm"] = None
    try:
        facts["load_average_when_recorded"] = read("/proc/loadavg").split()[:3]
    except OSError:
        pass
    facts["note"] = (
        "2-core shared virtual machine: other work ran at the same time; compare ratios measured side by side in this "
        "run, not absolute numbers across runs"
    )
    return facts


def recorded_machine(results_dir, jmh_entries):
    """The machine facts run.sh recorded when the run started (machine.json), with the JVM of its JMH results;
    without that file (runs before it was recorded), the facts of the machine making the summary, marked so."""
    path = os.path.join(results_dir, "machine.json")
    if os.path.exists(path):
        with open(path) as f:
            facts = json.load(f)
        facts["recorded"] = "when the run started"
        if jmh_entries:
            e = jmh_entries[0]
            facts["jvm"] = "{} {} (JDK {})".format(e.get("vmName"), e.get("vmVersion"), e.get("jdkVersion"))
            facts["jvm_path"] = e.get("jvm")
        return facts
    facts = machine_facts(jmh_entries)
    facts["recorded"] = "when the summary was made (the run did not record its machine)"
    return facts


if __name__ == "__main__":
    print(json.dumps(machine_facts(None), indent=2))
