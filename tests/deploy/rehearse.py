#!/usr/bin/env python3
"""The deploy rehearsal: `make deploy`, `make doctor` and `make destroy` run as a new user types them, with
recording stand-ins (tests/deploy/standin.py) for aws, docker, npx/cdk, cargo and rustup first on PATH, and
what each process received is asserted: its arguments, its working folder, its environment.

A test that reads a Makefile's text passes while the recipe fails (a variable bound to `cd` instead of the
command after it); here the recipes themselves run through make, in a copy of the checkout (its tracked and
unignored files, times kept, the CDK app's node_modules linked), so nothing a real deploy wrote (cdk.out/outputs.json)
is touched. The doctor speaks to a real `earshot serve` (the synthetic voice and the scripted agent), named by the
FunctionUrl the stand-in cdk writes into the outputs as cdk would. The preflight's Polly probe opens a real
StartSpeechSynthesisStream through the JavaScript SDK, against the Polly stand-in (earshot-standins) named by
AWS_ENDPOINT_URL_POLLY, as the SDK reads it. Without the aws CLI the preflight asks Lambda and CloudFormation
through the SDK (infra/cdk/bin/sdk-aws.ts): a small stand-in here answers those two as their API references
give them (Lambda's REST JSON GetAccountSettings, CloudFormation's query protocol DescribeStacks in XML), from
the same scenario state the stand-in aws answers from.

Usage: rehearse.py EARSHOT_BINARY STANDINS_BINARY   (make test-deploy builds them and runs this)
"""
import http.server
import json
import os
import threading
import urllib.parse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOLS = ("aws", "docker", "npx", "cargo", "rustup")
REGION = "eu-west-2"


def say(message):
    print(f"rehearsal: {message}", flush=True)


class Rehearsal:
    def __init__(self, earshot, standins):
        self.work = tempfile.mkdtemp(prefix="earshot-rehearsal-")
        self.repo = os.path.join(self.work, "repo")
        self.copy_checkout()
        bin_dir = os.path.join(self.work, "bin")
        os.makedirs(bin_dir)
        for tool in TOOLS:
            os.symlink(os.path.join(HERE, "standin.py"), os.path.join(bin_dir, tool))
        # cargo-lambda where make deploy looks for it (LAMBDA_TOOLS): the stand-in, which records its call.
        lambda_tools = os.path.join(self.work, "tools", "cargo-lambda")
        os.makedirs(os.path.join(lambda_tools, "bin"))
        os.symlink(os.path.join(HERE, "standin.py"), os.path.join(lambda_tools, "bin", "cargo-lambda"))
        with open(os.path.join(lambda_tools, ".installed"), "w") as stamp:  # the copy's own pins: nothing to install
            stamp.write(self.makefile_value("LAMBDA_PINS") + "\n")
        # Where cargo would have put `make build`'s binary: the real earshot, so the doctor really runs.
        self.target = os.path.join(self.work, "target")
        os.makedirs(os.path.join(self.target, "release"))
        os.symlink(earshot, os.path.join(self.target, "release/earshot"))
        self.earshot = earshot
        self.server = None
        self.standins = None
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "BUILDX_", "CDK_", "MAKE", "REHEARSAL_", "NODE_")) and k not in ("MFLAGS", "CARGO_TARGET_DIR")}
        self.env = {
            **env,
            "PATH": bin_dir + os.pathsep + env["PATH"],
            "AWS_REGION": REGION,
            "CARGO_TARGET_DIR": self.target,
            # make deploy installs cargo-lambda when it is missing; the stand-in cargo-lambda is there already.
            "LAMBDA_TOOLS": lambda_tools,
            # The deploying credentials, as the SDK finds them, and where its Polly calls go.
            "AWS_ACCESS_KEY_ID": "AKIAREHEARSAL",
            "AWS_SECRET_ACCESS_KEY": "rehearsal",
            "NODE_EXTRA_CA_CERTS": os.path.join(self.work, "standins.pem"),
        }
        self.sdk_asked = []
        self.sdk_server = sdk_standin(self)
        threading.Thread(target=self.sdk_server.serve_forever, daemon=True).start()
        # Last: nothing after it can fail and leave the process running without a Rehearsal to close it.
        self.polly = self.start_standins(standins)
        self.env["AWS_ENDPOINT_URL_POLLY"] = self.polly

    def start_standins(self, binary):
        """The AWS stand-ins (Polly's StartSpeechSynthesisStream among them) on a free port; their URL."""
        port = free_port()
        cert = os.path.join(self.work, "standins.pem")
        self.standins = subprocess.Popen([binary, "--port", str(port), "--cert-out", cert], stdout=open(os.path.join(self.work, "standins.log"), "w"), stderr=subprocess.STDOUT)
        for _ in range(200):
            if os.path.exists(cert):
                return f"https://127.0.0.1:{port}"
            if self.standins.poll() is not None:
                break
            time.sleep(0.05)
        fail("the AWS stand-ins did not start", open(os.path.join(self.work, "standins.log")).read())

    def makefile_value(self, name):
        """A variable as the copy's Makefile sets it, asked of make itself (not of this process's environment,
        where a `make test-deploy NAME=…` override would put another value than the copy's recipes use)."""
        env = {k: v for k, v in os.environ.items() if k != name and not k.startswith("MAKE") and k != "MFLAGS"}
        rule = f"print-value:\n\t@echo '$({name})'\n"
        r = subprocess.run(["make", "-s", "--no-print-directory", "-f", "Makefile", "-f", "-", "print-value"], cwd=self.repo, env=env, input=rule, capture_output=True, text=True)
        if r.returncode != 0 or not r.stdout.strip():
            shutil.rmtree(self.work, ignore_errors=True)
            fail(f"make could not say what the copy's Makefile sets {name} to (exit {r.returncode})", r.stdout + r.stderr)
        return r.stdout.strip()

    def copy_checkout(self):
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, check=True, capture_output=True).stdout
        for name in filter(None, listed.decode().split("\0")):
            source = os.path.join(ROOT, name)
            if not os.path.lexists(source):
                continue  # deleted in the working tree
            os.makedirs(os.path.dirname(os.path.join(self.repo, name)), exist_ok=True)
            shutil.copy2(source, os.path.join(self.repo, name), follow_symlinks=False)
        # The copy's `make deps` must find the packages installed, or it would run npm ci through the link into
        # the real checkout's node_modules: the rehearsal stops instead (make test-deploy installs them first).
        modules = os.path.join(ROOT, "infra/cdk/node_modules")
        stamp = os.path.join(modules, ".earshot-npm-ci")
        lock = [os.path.join(ROOT, "infra/cdk", f) for f in ("package-lock.json", "package.json")]
        if not os.path.exists(stamp) or any(os.path.getmtime(f) > os.path.getmtime(stamp) for f in lock):
            raise SystemExit("rehearsal: the CDK app's packages are not installed or are stale: run make -C infra/cdk deps first (make test-deploy does)")
        os.symlink(modules, os.path.join(self.repo, "infra/cdk/node_modules"))

    def scenario(self, name, **env):
        """A fresh account: no stacks, nothing bootstrapped."""
        self.dir = os.path.join(self.work, name)
        os.makedirs(self.dir)
        self.scenario_env = {"REHEARSAL_DIR": self.dir, **env}
        say(name)

    def make(self, *args, expect_ok=True, **env):
        """Runs `make ARGS` in the copy as typed; returns its output and the calls the stand-ins saw."""
        log = os.path.join(self.dir, "calls.jsonl")
        seen = sum(1 for _ in open(log)) if os.path.exists(log) else 0
        started = time.time()
        r = subprocess.run(["make", *args], cwd=self.repo, env={**self.env, **self.scenario_env, **env}, capture_output=True, text=True, timeout=600)
        output = r.stdout + r.stderr
        calls = [json.loads(line) for line in open(log).readlines()[seen:]] if os.path.exists(log) else []
        say(f"  make {' '.join(args)}: exit {r.returncode} in {time.time() - started:.1f} s, {len(calls)} calls")
        if (r.returncode == 0) != expect_ok:
            fail(f"make {' '.join(args)} exited {r.returncode}", output)
        unknown = [c for c in calls if c.get("unknown")]
        check(not unknown, f"calls no stand-in knows: {[[c['tool'], *c['argv']] for c in unknown]}", output)
        return output, calls

    def seed(self, stacks):
        """The account as a scenario finds it: these stacks, the CDK bootstrapped, the cache's bucket empty."""
        with open(os.path.join(self.dir, "state.json"), "w") as f:
            json.dump({"bootstrapped": True, "stacks": stacks, "images": [], "bucket_objects": 0}, f)

    def path_without(self, tool):
        """PATH with the stand-ins but `tool`, and no folder of this machine that has a real one."""
        bin_dir = os.path.join(self.work, f"bin-without-{tool}")
        if not os.path.isdir(bin_dir):
            os.makedirs(bin_dir)
            for other in TOOLS:
                if other != tool:
                    os.symlink(os.path.join(HERE, "standin.py"), os.path.join(bin_dir, other))
        rest = [p for p in self.env["PATH"].split(os.pathsep)[1:] if not os.path.exists(os.path.join(p, tool))]
        return os.pathsep.join([bin_dir, *rest])

    def path_with(self, *tools):
        """PATH with the stand-ins and `tools` too (standin.py answers as each: `uname` says Darwin)."""
        bin_dir = os.path.join(self.work, "bin-with-" + "-".join(tools))
        if not os.path.isdir(bin_dir):
            os.makedirs(bin_dir)
            for tool in tools:
                os.symlink(os.path.join(HERE, "standin.py"), os.path.join(bin_dir, tool))
        return os.pathsep.join([bin_dir, self.env["PATH"]])

    def state(self):
        with open(os.path.join(self.dir, "state.json")) as f:
            return json.load(f)

    def serve(self):
        """A gateway for the doctor to speak to: the synthetic voice and the scripted agent."""
        port = free_port()
        self.server = subprocess.Popen(
            [self.earshot, "serve", "--port", str(port), "--web-dir", "", "--backends", "synthetic"],
            stdout=open(os.path.join(self.work, "serve.log"), "w"),
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=1) as r:
                    if r.status == 200:
                        return url
            except OSError:
                time.sleep(0.1)
        fail("earshot serve did not become healthy", open(os.path.join(self.work, "serve.log")).read())

    def close(self):
        self.sdk_server.shutdown()
        for process in (self.server, self.standins):
            if process:
                process.terminate()
                process.wait(timeout=10)
        shutil.rmtree(self.work, ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fail(message, output=""):
    print(output[-6000:], file=sys.stderr)
    raise SystemExit(f"rehearsal FAILED: {message}")


def check(condition, message, output=""):
    if not condition:
        fail(message, output)


def sdk_standin(r):
    """Lambda's GetAccountSettings and CloudFormation's DescribeStacks as the SDK calls them, answered from the
    scenario: REHEARSAL_LAMBDA_CONCURRENCY (the account's limit) and REHEARSAL_LAMBDA_UNRESERVED (what other
    functions leave unreserved; the limit by default), and the stacks the stand-in cdk made. Each request is
    kept in r.sdk_asked with the service its signature names."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, status, content_type, body):
            data = body.encode()
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def asked(self, what):
            scope = self.headers.get("authorization", "").split("Credential=")[-1].split(",")[0].split("/")
            r.sdk_asked.append({"what": what, "region": scope[2] if len(scope) > 3 else None, "service": scope[3] if len(scope) > 3 else None})

        def do_GET(self):
            if self.path.startswith("/2016-08-19/account-settings"):
                self.asked("GetAccountSettings")
                limit = int(r.scenario_env.get("REHEARSAL_LAMBDA_CONCURRENCY", "1000"))
                unreserved = int(r.scenario_env.get("REHEARSAL_LAMBDA_UNRESERVED", str(limit)))
                body = {"AccountLimit": {"TotalCodeSize": 80530636800, "CodeSizeUnzipped": 262144000, "CodeSizeZipped": 52428800, "ConcurrentExecutions": limit, "UnreservedConcurrentExecutions": unreserved},
                        "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": 0}}
                return self.reply(200, "application/json", json.dumps(body))
            # Bedrock's control plane (REST JSON): the model or inference profile as the stand-in aws answers it.
            if self.path.startswith("/inference-profiles/"):
                profile = urllib.parse.unquote(self.path.split("/", 2)[2])
                self.asked(f"GetInferenceProfile {profile}")
                return self.reply(200, "application/json", json.dumps({"inferenceProfileId": profile, "inferenceProfileName": profile, "status": "ACTIVE", "type": "SYSTEM_DEFINED", "models": []}))
            if self.path.startswith("/foundation-models/"):
                model = urllib.parse.unquote(self.path.split("/", 2)[2])
                self.asked(f"GetFoundationModel {model}")
                details = {"modelId": model, "modelArn": f"arn:aws:bedrock:{REGION}::foundation-model/{model}", "responseStreamingSupported": True, "inferenceTypesSupported": ["ON_DEMAND"], "modelLifecycle": {"status": "ACTIVE"}}
                return self.reply(200, "application/json", json.dumps({"modelDetails": details}))
            self.reply(404, "application/json", json.dumps({"message": f"no such path {self.path}"}))

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", "0"))).decode()
            target = self.headers.get("x-amz-target", "")
            if target.startswith("ServiceQuotasV20190624."):
                # Service Quotas speaks JSON 1.1: applied values only where asked for them (none raised here).
                operation, code = target.split(".", 1)[1], json.loads(body or "{}").get("ServiceCode")
                self.asked(f"{operation} {code}")
                quotas = [{"QuotaName": f"ml.{t}.xlarge for endpoint usage", "Value": 2.0} for t in ("g5", "g6")] if code == "sagemaker" else []
                return self.reply(200, "application/x-amz-json-1.1", json.dumps({"Quotas": quotas}))
            form = urllib.parse.parse_qs(body)
            if form.get("Action") != ["DescribeStacks"]:
                return self.reply(400, "text/xml", "<ErrorResponse><Error><Code>InvalidAction</Code><Message>not rehearsed</Message></Error></ErrorResponse>")
            name = form.get("StackName", [""])[0]
            self.asked(f"DescribeStacks {name}")
            made = os.path.exists(os.path.join(r.dir, "state.json"))  # the stand-ins write it once they make something
            stack = r.state()["stacks"].get(name) if made else None
            xmlns = "http://cloudformation.amazonaws.com/doc/2010-05-15/"
            if stack is None:
                error = f"<Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id {name} does not exist</Message></Error>"
                return self.reply(400, "text/xml", f'<ErrorResponse xmlns="{xmlns}">{error}<RequestId>rehearsal</RequestId></ErrorResponse>')
            status = stack.get("_status", "CREATE_COMPLETE")
            member = f"<member><StackName>{name}</StackName><StackStatus>{status}</StackStatus><CreationTime>2026-12-06T00:00:00Z</CreationTime></member>"
            self.reply(200, "text/xml", f'<DescribeStacksResponse xmlns="{xmlns}"><DescribeStacksResult><Stacks>{member}</Stacks></DescribeStacksResult></DescribeStacksResponse>')

    return http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)


def calls_of(calls, tool, *words):
    """The calls of `tool` whose arguments hold every one of `words`, in order of arrival."""
    return [c for c in calls if c["tool"] == tool and all(w in c["argv"] for w in words)]


def context(call):
    argv = call["argv"]
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a in ("-c", "--context") and i + 1 < len(argv))


def first_deploy(r):
    r.scenario("a first deploy as the README says, then the doctor, then destroy", REHEARSAL_SUBSCRIBED="0", REHEARSAL_FUNCTION_URL=r.serve())
    out, calls = r.make("deploy", "CDK_ARGS=-c authType=NONE")
    build = calls_of(calls, "cargo", "lambda", "build")
    check(len(build) == 1 and "--arm64" in build[0]["argv"], f"one arm64 build of the bootstrap: {build}", out)
    lambda_dir = build[0]["argv"][build[0]["argv"].index("--lambda-dir") + 1]
    check(lambda_dir == os.path.join(r.target, "lambda-arm64"), f"the bootstrap is built where make deploy hands it to cdk: {lambda_dir}", out)
    check(calls_of(calls, "aws", "sts", "get-caller-identity"), "the credentials are asked for before anything is made", out)
    voices = calls_of(calls, "aws", "polly", "describe-voices")
    check(voices and voices[0]["argv"][voices[0]["argv"].index("--region") + 1] == REGION, f"the preflight asks the deploying Region: {voices}", out)
    check(calls_of(calls, "docker", "info"), "Docker is asked whether it runs (the Kokoro image needs it)", out)
    check(f"Polly bidirectional streaming answers in {REGION}: a stream opened and closed (0 characters billed)" in out, "the preflight opened and closed one Polly stream", out)
    check("authType NONE: anyone with the URL may call. One stranger (one address, or one IPv6 /64) in an hour at most: 30,000 characters spoken ($0.90 of Polly)" in out,
          "a public deploy says what one stranger can spend in an hour before anything is made", out)
    check(out.index("One stranger") < out.index("==> cdk deploy"), "the stranger's ceiling is said before cdk deploy", out)
    check(f"Polly allows 26 concurrent generative requests (the default, none applied in {REGION}); pollyConversations 8 holds up to 24" in out,
          "the preflight sets Polly's concurrency quota beside the gateway's cap", out)

    cdk = [c for c in calls if c["tool"] == "npx"]
    verbs = [next(a for a in c["argv"][c["argv"].index("cdk") + 1 :] if not a.startswith("-")) for c in cdk]
    check(verbs == ["bootstrap", "deploy"], f"cdk bootstrap, then cdk deploy: {verbs}", out)
    deploy = cdk[1]
    check(deploy["cwd"] == os.path.join(r.repo, "infra/cdk"), f"cdk runs in the CDK app: {deploy['cwd']}", out)
    check("--no-install" in deploy["argv"], "npx never downloads a cdk of its own", out)
    for words in (["--all"], ["--require-approval", "never"], ["--outputs-file", "cdk.out/outputs.json"]):
        at = deploy["argv"].index(words[0]) if words[0] in deploy["argv"] else -1
        check(at >= 0 and deploy["argv"][at : at + len(words)] == words, f"cdk deploy {' '.join(words)}: {deploy['argv']}", out)
    ctx = context(deploy)
    expected = {"lambdaArchitecture": "arm64", "bootstrapDir": os.path.join(lambda_dir, "bootstrap"), "requireBootstrap": "true", "authType": "NONE"}
    check(all(ctx.get(k) == v for k, v in expected.items()), f"the context reaches cdk: {ctx}, expected {expected}", out)
    check(context(cdk[0]).get("lambdaArchitecture") == "arm64", f"bootstrap sees the same context: {cdk[0]['argv']}", out)
    # The reason for the rehearsal: the attestation setting reaches cdk and the Docker cdk runs, so the pushed
    # image stays Docker-typed and SageMaker's CreateModel takes it.
    for call in [deploy, *calls_of(calls, "docker", "build"), *calls_of(calls, "docker", "push")]:
        check(call["env"].get("BUILDX_NO_DEFAULT_ATTESTATIONS") == "1", f"{call['tool']} {call['argv'][:2]} ran without BUILDX_NO_DEFAULT_ATTESTATIONS=1", out)
        check(call["env"].get("AWS_REGION") == REGION, f"{call['tool']} ran outside {REGION}", out)
    check(len(calls_of(calls, "docker", "push")) == 1, "the Kokoro image is pushed once", out)
    outputs = json.load(open(os.path.join(r.repo, "infra/cdk/cdk.out/outputs.json")))
    url = outputs["EarshotGateway"]["FunctionUrl"]
    check(f"EarshotGateway FunctionUrl: {url}" in out, "make deploy prints the URL", out)
    check("warning: no one is subscribed to the spend alarms" in out and "aws sns subscribe --topic-arn" in out, "make deploy says no one receives the alarms", out)

    out, calls = r.make("doctor")
    check(f"==> earshot doctor --url {url} (auth NONE)" in out, "the doctor gets the URL and auth the outputs name", out)
    check(calls_of(calls, "cargo", "build", "--release"), "make doctor builds earshot as make build does", out)
    check("synthetic" in out, "the doctor spoke to the deployed gateway's arm", out)

    out, calls = r.make("destroy")
    emptied = calls_of(calls, "aws", "s3", "rm")
    check(emptied and emptied[0]["argv"][2] == "s3://earshotgateway-cachebucket-rehearsal" and "--recursive" in emptied[0]["argv"], f"the cache's bucket is emptied first: {emptied}", out)
    destroy = calls_of(calls, "npx", "destroy")
    check(destroy and "--all" in destroy[0]["argv"] and "--force" in destroy[0]["argv"], f"cdk destroy --all --force: {destroy}", out)
    check(context(destroy[0]).get("pollyOnly") == "false", "destroy names both stacks whatever the config says", out)
    check(r.state()["stacks"] == {}, f"destroy removed what deploy made: {r.state()['stacks']}", out)


def denied_and_throttled(r):
    r.scenario("a deployer who may not ask Polly and is throttled by Service Quotas", REHEARSAL_POLLY="denied", REHEARSAL_QUOTAS="throttled", REHEARSAL_SUBSCRIBED="1")
    out, calls = r.make("deploy", AWS_ENDPOINT_URL_POLLY=f"https://127.0.0.1:{free_port()}")
    check("not checked: Polly bidirectional streaming by opening a stream (" in out and "ECONNREFUSED" in out, "a probe that reaches no Polly is said, not taken for a missing operation", out)
    check(f"not checked: Polly bidirectional streaming in {REGION}" not in out, f"{REGION} is on the dated list: nothing more is said", out)
    check("not checked: Polly generative voices (aws polly describe-voices failed: An error occurred (AccessDeniedException)" in out, "a denied question is said, not taken for a missing voice", out)
    check('not checked: the SageMaker quota "ml.g5.xlarge for endpoint usage" (aws service-quotas failed: An error occurred (TooManyRequestsException)' in out, "a throttled question is said", out)
    check(calls_of(calls, "npx", "deploy"), "the deploy goes on when a check could not be made", out)
    # A new account (10 concurrent executions in all) cannot reserve the configuration's twenty: none is reserved, and
    # that is said; the deploy goes on.
    out, calls = r.make("deploy", REHEARSAL_LAMBDA_CONCURRENCY="10")
    check("reservedConcurrency 20: the account's Lambda concurrency in eu-west-2 is 10" in out and "this deploy reserves none" in out, "the configuration's reservation that the account cannot hold is dropped, said", out)
    deploy = calls_of(calls, "npx", "deploy")
    check(deploy and context(deploy[0]).get("reservedConcurrency") == "0", f"cdk deploys with no reservation: {deploy}", out)
    # A figure the deployer names is held to: stopped, with the way out, before anything is built.
    out, calls = r.make("deploy", "CDK_ARGS=-c reservedConcurrency=20", expect_ok=False, REHEARSAL_LAMBDA_CONCURRENCY="10")
    check("reservedConcurrency 20: the account's Lambda concurrency in eu-west-2 is 10" in out and "-c reservedConcurrency=0" in out, "a reservation named on the command line that the account cannot hold stops the deploy with the flag", out)
    check(not calls_of(calls, "npx", "deploy"), "nothing is deployed then", out)
    check(not calls_of(calls, "cargo"), "nor built: the preflight comes before the Lambda's cross-build", out)
    out, calls = r.make("deploy", "CDK_ARGS=-c reservedConcurrency=0", REHEARSAL_LAMBDA_CONCURRENCY="10")
    check(not calls_of(calls, "aws", "lambda") and context(calls_of(calls, "npx", "deploy")[0]).get("reservedConcurrency") == "0", "no reservation: nothing asked, the figure reaches cdk", out)
    check("the spend alarms reach email:ops@example.com" in out, "make deploy names who receives the alarms", out)
    check(context(calls_of(calls, "npx", "deploy")[0]).get("authType") is None, "no CDK_ARGS: the config's own auth", out)


def polly_only(r):
    r.scenario("a Polly-only deploy in a Region without the voice, then over an earlier full deploy", REHEARSAL_POLLY="novoice")
    # A Polly endpoint that does not know StartSpeechSynthesisStream (the stand-in's 404 UnknownOperationException).
    out, calls = r.make("deploy", "POLLY_ONLY=true", expect_ok=False, REHEARSAL_POLLY="ok", AWS_ENDPOINT_URL_POLLY=r.polly + "/elsewhere")
    check(f"Polly bidirectional streaming (StartSpeechSynthesisStream) in {REGION}: the Region's Polly endpoint does not know the operation (UnknownOperationException (HTTP 404)" in out, "the probe's verdict stops the deploy, with the reason", out)
    check(not calls_of(calls, "npx"), "nothing is created when Polly cannot stream", out)
    # A Region off the dated list whose Polly answers the probe: nothing to say of the list.
    out, calls = r.make("deploy", "POLLY_ONLY=true", expect_ok=False, AWS_REGION="ap-northeast-1")
    check("Polly bidirectional streaming answers in ap-northeast-1" in out and "not checked: Polly bidirectional streaming" not in out, "a Region whose Polly answered needs no list", out)
    out, calls = r.make("deploy", "POLLY_ONLY=true", expect_ok=False)
    check(f"the Polly generative voice Ruth (pollyVoice) is not offered in {REGION}; it offers Matthew, Amy" in out, "the missing voice is named with what the Region offers", out)
    check(not calls_of(calls, "npx"), "nothing is created when the Region lacks what the configuration needs", out)
    check(not calls_of(calls, "docker"), "a Polly-only deploy never asks for Docker", out)

    out, calls = r.make("deploy", REHEARSAL_POLLY="ok", REHEARSAL_SUBSCRIBED="pending")
    check(r.state()["stacks"].get("EarshotKokoroModel"), "the full deploy made the model stack", out)
    check("must confirm the subscription" in out, "a subscription awaiting confirmation is said", out)
    out, calls = r.make("deploy", "POLLY_ONLY=true", REHEARSAL_POLLY="ok", REHEARSAL_SUBSCRIBED="1")
    check("the EarshotKokoroModel stack of an earlier deployment is still there" in out, "a Polly-only deploy warns of the GPU endpoint still billing", out)
    check(not calls_of(calls, "docker"), "a Polly-only deploy never runs Docker", out)
    check(context(calls_of(calls, "npx", "deploy")[0]).get("pollyOnly") == "true", "POLLY_ONLY reaches cdk", out)


def destroy_whatever_is_left(r):
    r.scenario("destroy after a deploy cut short, twice, on a stack rolled back, refused, and without the aws CLI")
    model = {"EndpointName": "earshot-kokoro", "ImageUri": "kokoro"}
    # A deploy cut short while the endpoint came up: the model stack bills, there is no gateway stack.
    r.seed({"EarshotKokoroModel": model})
    out, calls = r.make("destroy")
    check(calls_of(calls, "aws", "cloudformation", "describe-stacks", "EarshotGateway"), "the gateway's bucket was asked for", out)
    check(calls_of(calls, "npx", "destroy"), "a missing gateway stack does not stop destroy before cdk", out)
    check(r.state()["stacks"] == {} and "nothing of earshot's bills" in out, "the model stack went, and destroy says nothing bills", out)
    out, calls = r.make("destroy")
    check("nothing of earshot's bills" in out, "run again, destroy says so and succeeds", out)
    # A first deploy that failed leaves its stack in ROLLBACK_COMPLETE: it is deleted like any other.
    r.seed({"EarshotGateway": {"_status": "ROLLBACK_COMPLETE"}})
    out, calls = r.make("destroy")
    check(r.state()["stacks"] == {} and "nothing of earshot's bills" in out, "a stack in ROLLBACK_COMPLETE is removed", out)
    # CloudFormation could not delete a stack: destroy lists what is left, billing, and fails.
    r.seed({"EarshotKokoroModel": {**model, "_status": "DELETE_FAILED"}})
    out, calls = r.make("destroy", expect_ok=False, REHEARSAL_DESTROY="fail")
    check("still there, and billing while it is: EarshotKokoroModel (DELETE_FAILED)" in out, "a stack left is named with its status", out)
    # No aws CLI: cdk alone removes the stacks, and destroy says what it could not check.
    r.seed({"EarshotKokoroModel": model, "EarshotGateway": {"CacheBucket": "earshotgateway-cachebucket-rehearsal"}})
    out, calls = r.make("destroy", PATH=r.path_without("aws"))
    check(not calls_of(calls, "aws") and calls_of(calls, "npx", "destroy"), "without the aws CLI, cdk destroy still runs", out)
    check(r.state()["stacks"] == {} and "without the aws CLI what is left cannot be listed" in out, "both stacks went, and destroy says what it could not check", out)


def deploy_cut_short(r):
    r.scenario("a deploy whose gateway stack is refused after the endpoint is up, with and without the aws CLI", REHEARSAL_SUBSCRIBED="1")
    out, calls = r.make("deploy", expect_ok=False, REHEARSAL_DEPLOY="gateway_refused")
    check("UnreservedConcurrentExecution below its minimum value of [10]" in out, "cdk's own reason is shown", out)
    check("EarshotKokoroModel (CREATE_COMPLETE): the Kokoro endpoint, 1 × ml.g5.xlarge at $1.41 an hour each" in out, "the billing endpoint is named with its price", out)
    check("EarshotGateway (ROLLBACK_COMPLETE)" in out and "remove it all with: make destroy" in out, "the rolled-back stack and the one command", out)
    r.seed({})
    out, calls = r.make("deploy", expect_ok=False, REHEARSAL_DEPLOY="gateway_refused", PATH=r.path_without("aws"))
    check("without the aws CLI what exists cannot be listed; the deploy may have made:" in out and "EarshotKokoroModel: the Kokoro endpoint" in out, "without the aws CLI, what may bill", out)
    out, calls = r.make("destroy")
    check("nothing of earshot's bills" in out, "and destroy clears it", out)


def instance_type_change(r):
    r.scenario("a new instance type for a deployed endpoint under autoscaling", REHEARSAL_SUBSCRIBED="1")
    r.make("deploy")
    g6 = "-c instanceType=ml.g6.xlarge -c instanceUsdPerHour=0.805"
    out, calls = r.make("deploy", f"CDK_ARGS={g6}", expect_ok=False)
    check("the endpoint earshot-kokoro runs ml.g5.xlarge as an autoscaling target, and SageMaker refuses to change the instance type of one" in out
          and "add -c endpointName=earshot-kokoro-g6-xlarge" in out, "the change SageMaker would refuse is refused first, with the name that deploys it", out)
    check(not calls_of(calls, "npx"), "nothing is deployed", out)
    out, calls = r.make("deploy", f"CDK_ARGS={g6} -c endpointName=earshot-kokoro-g6-xlarge")
    deploy = calls_of(calls, "npx", "deploy")
    check(deploy and context(deploy[0]).get("endpointName") == "earshot-kokoro-g6-xlarge", f"a new endpoint beside the old: {deploy}", out)
    check(r.state()["stacks"]["EarshotKokoroModel"]["InstanceType"] == "ml.g6.xlarge", "the model stack runs the new type", out)
    r.make("destroy")


def no_aws_cli(r):
    r.scenario("a deploy without the aws CLI: a new account's concurrency and other functions' reservations, asked through the SDK", REHEARSAL_LAMBDA_CONCURRENCY="10")
    sdk = f"http://127.0.0.1:{r.sdk_server.server_address[1]}"
    # The reservation named, so that an account without room stops the deploy (the configuration's own is dropped).
    chosen = "CDK_ARGS=-c reservedConcurrency=20"
    endpoints = {"AWS_ENDPOINT_URL_LAMBDA": sdk, "AWS_ENDPOINT_URL_CLOUDFORMATION": sdk, "AWS_ENDPOINT_URL_SERVICE_QUOTAS": sdk, "AWS_ENDPOINT_URL_BEDROCK": sdk}
    out, calls = r.make("deploy", chosen, expect_ok=False, PATH=r.path_without("aws"), **endpoints)
    check("the aws CLI is not installed: every question is asked through the AWS SDK for JavaScript instead" in out, "the SDK asks where the CLI cannot", out)
    check(f"reservedConcurrency 20: the account's Lambda concurrency in {REGION} is 10" in out and "no function can reserve any" in out, "a new account's 10 stop the deploy", out)
    check(not calls_of(calls, "npx"), "nothing is created: no cdk bootstrap or deploy", out)
    check({"what": "GetAccountSettings", "region": REGION, "service": "lambda"} in r.sdk_asked, f"Lambda was asked, signed for {REGION}: {r.sdk_asked}", out)
    check("not checked: the Bedrock model" not in out and "needs the aws CLI" not in out, "every question was asked through the SDK", out)
    check("not checked: the SageMaker quota" not in out and f"Polly allows 26 concurrent generative requests (the default, none applied in {REGION})" in out, "the quotas were asked through the SDK", out)
    check("not checked: Polly generative voices" not in out, "Polly's voices were asked through the SDK (the Polly stand-in lists them)", out)
    # An account with room whose other functions reserve most of it: on a first deploy the stack is asked for.
    r.sdk_asked.clear()
    r.scenario_env["REHEARSAL_LAMBDA_CONCURRENCY"], r.scenario_env["REHEARSAL_LAMBDA_UNRESERVED"] = "1000", "110"
    out, calls = r.make("deploy", chosen, expect_ok=False, PATH=r.path_without("aws"), **endpoints)
    check("other functions already reserve 890 of the account's 1000" in out and "at most 10 can be reserved" in out, "other functions' reservations stop a first deploy", out)
    asked = [a["what"] for a in r.sdk_asked]
    expected = ["ListServiceQuotas polly", "GetInferenceProfile eu.amazon.nova-lite-v1:0", "GetAccountSettings", "DescribeStacks EarshotGateway", "ListServiceQuotas sagemaker", "DescribeStacks EarshotKokoroModel"]
    check(asked == expected, f"every question went through the SDK: {r.sdk_asked}", out)
    check(not calls_of(calls, "npx"), "nothing is created", out)
    check(not calls_of(calls, "cargo"), "nothing is built", out)
    # No aws CLI and no AWS_REGION: the Region in the profile (~/.aws/config) is the one asked, as cdk would deploy to.
    r.sdk_asked.clear()
    profile = os.path.join(r.dir, "aws-config")
    with open(profile, "w") as f:
        f.write(f"[default]\nregion = {REGION}\n")
    out, calls = r.make("deploy", chosen, expect_ok=False, PATH=r.path_without("aws"), AWS_REGION="", AWS_CONFIG_FILE=profile, **endpoints)
    check(f"asking AWS whether {REGION} offers" in out and "other functions already reserve 890" in out, "the profile's Region is asked in", out)
    check({"what": "GetAccountSettings", "region": REGION, "service": "lambda"} in r.sdk_asked, f"Lambda was asked, signed for the profile's {REGION}: {r.sdk_asked}", out)
    check(not calls_of(calls, "cargo"), "nothing is built", out)


def a_laptop(r):
    r.scenario("a first deploy from a laptop: no credentials yet, a Mac without cmake")
    out, calls = r.make("deploy", expect_ok=False, REHEARSAL_CREDENTIALS="none")
    check("no AWS credentials" in out and "nothing was built or created" in out, "the credentials are asked for first", out)
    check(not calls_of(calls, "cargo") and not calls_of(calls, "npx"), "nothing is built or created without them", out)
    # On a Mac the packages the build needs come from Homebrew (the one a tool is missing from is asked for).
    mac = r.path_with("uname", "brew")
    script = os.path.join(r.repo, "scripts/debian-packages.sh")
    env = {**r.env, **r.scenario_env, "PATH": mac}
    done = subprocess.run(["bash", script, "earshot-rehearsal-missing:opus-tools"], env=env, capture_output=True, text=True)
    asked = [json.loads(line) for line in open(os.path.join(r.dir, "calls.jsonl")) if '"brew"' in line]
    check(done.returncode == 0 and "installing opus-tools (Homebrew)" in done.stdout, "a Mac installs with Homebrew", done.stdout + done.stderr)
    check(asked and asked[-1]["argv"] == ["install", "opus-tools"], f"brew install opus-tools: {asked}", done.stdout)
    without = subprocess.run(["bash", script, "earshot-rehearsal-missing:opus-tools"], env={**env, "PATH": r.path_with("uname")}, capture_output=True, text=True)
    check(without.returncode == 1 and "install Homebrew" in without.stderr, "a Mac without Homebrew is told what to install", without.stdout + without.stderr)


def main():
    if len(sys.argv) != 3 or not all(os.access(b, os.X_OK) for b in sys.argv[1:]):
        raise SystemExit("usage: rehearse.py EARSHOT_BINARY STANDINS_BINARY")
    started = time.time()
    r = Rehearsal(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    try:
        first_deploy(r)
        denied_and_throttled(r)
        polly_only(r)
        destroy_whatever_is_left(r)
        deploy_cut_short(r)
        no_aws_cli(r)
        instance_type_change(r)
        a_laptop(r)
    finally:
        r.close()
    say(f"make deploy, doctor and destroy ran as written ({time.time() - started:.0f} s)")


main()
