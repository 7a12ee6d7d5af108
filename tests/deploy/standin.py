#!/usr/bin/env python3
"""Recording stand-ins for the tools `make deploy`, `make doctor` and `make destroy` run: aws, docker, npx (for
cdk), cargo (for cargo-lambda) and rustup. One program, called by each of those names (links in a folder put
first on PATH by tests/deploy/rehearse.py).

Each call appends one JSON line to $REHEARSAL_DIR/calls.jsonl: the name, the arguments, the working folder and
the environment variables a deploy depends on (AWS_*, BUILDX_*, CDK_*, DOCKER_*, EARSHOT_*). Each answers as the
real tool does on the happy path, in the shapes the recipes and the preflight read (aws CLI v2's JSON output,
its exit status 254 and "An error occurred (Code) when calling the Op operation: message" on stderr for a
service error, 255 for missing credentials), and keeps what a deploy made in $REHEARSAL_DIR/state.json so that
destroy and a later deploy see it. Environment variables choose the unhappy answers:

  REHEARSAL_POLLY   ok | denied | novoice   (polly describe-voices --engine generative)
  REHEARSAL_QUOTAS  ok | throttled          (service-quotas list-service-quotas)
  REHEARSAL_LAMBDA_CONCURRENCY  1000 | N    (lambda get-account-settings: the account's concurrency; new accounts have 10)
  REHEARSAL_SUBSCRIBED  0 | 1 | pending     (sns list-subscriptions-by-topic)
  REHEARSAL_FUNCTION_URL                    (the FunctionUrl output a deploy writes)
  REHEARSAL_DESTROY  ok | fail              (cdk destroy: fail is a stack CloudFormation could not delete)
  REHEARSAL_DEPLOY   ok | gateway_refused   (cdk deploy: the gateway stack refused after the model stack is up)
  REHEARSAL_CREDENTIALS  ok | none          (sts get-caller-identity: none is a laptop not yet configured)

As `uname` it says Darwin (a Mac), and as `brew` it records what it was asked to install.

A stack's `_status` in state.json is its StackStatus (CREATE_COMPLETE when absent): a scenario writes
ROLLBACK_COMPLETE there for a first deploy that failed.

A call no stand-in knows exits 252 with the call on stderr, and rehearse.py fails on any such call: the
recipes may not grow a step that nothing here has seen. What cdk deploy does with Docker is modelled on
cdk-assets: it runs `docker build` and `docker push` as child processes that inherit its environment, which
is how BUILDX_NO_DEFAULT_ATTESTATIONS must reach Docker.
"""
import json
import os
import shlex
import subprocess
import sys

NAME = os.path.basename(sys.argv[0])
ARGS = sys.argv[1:]
DIR = os.environ["REHEARSAL_DIR"]
ACCOUNT = "111122223333"
KEPT = ("AWS_", "BUILDX_", "CDK_", "DOCKER_", "EARSHOT_")


def record(**extra):
    env = {k: v for k, v in os.environ.items() if k.startswith(KEPT)}
    line = {"tool": NAME, "argv": ARGS, "cwd": os.getcwd(), "env": env, **extra}
    with open(os.path.join(DIR, "calls.jsonl"), "a") as f:
        f.write(json.dumps(line) + "\n")


def state():
    try:
        with open(os.path.join(DIR, "state.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"bootstrapped": False, "stacks": {}, "images": [], "bucket_objects": 0}


def save(s):
    with open(os.path.join(DIR, "state.json"), "w") as f:
        json.dump(s, f, indent=1)


def unknown():
    record(unknown=True)
    print(f"rehearsal: the {NAME} stand-in does not know `{shlex.join([NAME, *ARGS])}`", file=sys.stderr)
    sys.exit(252)


def option(name, default=None):
    return ARGS[ARGS.index(name) + 1] if name in ARGS and ARGS.index(name) + 1 < len(ARGS) else default


def service_error(code, operation, message):
    print(f"\nAn error occurred ({code}) when calling the {operation} operation: {message}", file=sys.stderr)
    sys.exit(254)


def out(value):
    print(json.dumps(value, indent=4))
    sys.exit(0)


# --- aws ---------------------------------------------------------------------------------------------------

def aws():
    record()
    region = option("--region", os.environ.get("AWS_REGION", ""))
    words = [a for a in ARGS if not a.startswith("--")][:2]
    if words == ["sts", "get-caller-identity"]:
        if os.environ.get("REHEARSAL_CREDENTIALS") == "none":
            print("\nUnable to locate credentials. You can configure credentials by running \"aws configure\".", file=sys.stderr)
            sys.exit(255)
        if option("--query") == "Arn":
            print(f"arn:aws:iam::{ACCOUNT}:user/new-user")
            sys.exit(0)
        out({"UserId": "AIDAREHEARSAL", "Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/new-user"})
    if words == ["configure", "get"]:
        print(os.environ.get("AWS_REGION", ""))
        sys.exit(0 if os.environ.get("AWS_REGION") else 1)
    if words == ["polly", "describe-voices"]:
        mode = os.environ.get("REHEARSAL_POLLY", "ok")
        if mode == "denied":
            service_error("AccessDeniedException", "DescribeVoices", f"User: arn:aws:iam::{ACCOUNT}:user/new-user is not authorized to perform: polly:DescribeVoices")
        ids = ["Matthew", "Amy"] if mode == "novoice" else ["Ruth", "Matthew", "Amy", "Léa"]
        out({"Voices": [{"Id": i, "SupportedEngines": ["generative", "neural"]} for i in ids]})
    if words == ["bedrock", "get-inference-profile"]:
        out({"inferenceProfileId": option("--inference-profile-identifier"), "status": "ACTIVE", "type": "SYSTEM_DEFINED"})
    if words == ["bedrock", "get-foundation-model"]:
        out({"modelDetails": {"modelId": option("--model-identifier"), "responseStreamingSupported": True, "inferenceTypesSupported": ["ON_DEMAND"], "modelLifecycle": {"status": "ACTIVE"}}})
    if words == ["lambda", "get-account-settings"]:
        # The shape of GetAccountSettings (Lambda API reference): AccountLimit and AccountUsage.
        limit = int(os.environ.get("REHEARSAL_LAMBDA_CONCURRENCY", "1000"))
        out({"AccountLimit": {"TotalCodeSize": 80530636800, "CodeSizeUnzipped": 262144000, "CodeSizeZipped": 52428800, "ConcurrentExecutions": limit, "UnreservedConcurrentExecutions": limit},
             "AccountUsage": {"TotalCodeSize": 0, "FunctionCount": 0}})
    if words[0] == "service-quotas" and words[1] in ("list-service-quotas", "list-aws-default-service-quotas"):
        if os.environ.get("REHEARSAL_QUOTAS", "ok") == "throttled":
            service_error("TooManyRequestsException", "ListServiceQuotas (reached max retries: 2)", "Rate exceeded")
        if option("--service-code") == "polly":
            out({"Quotas": []})  # ListServiceQuotas lists applied values only: none raised on this account
        out({"Quotas": [{"QuotaName": "ml.g5.xlarge for endpoint usage", "Value": 2.0}, {"QuotaName": "ml.g6.xlarge for endpoint usage", "Value": 2.0}]})
    if words == ["cloudformation", "describe-stacks"]:
        name = option("--stack-name")
        stack = state()["stacks"].get(name)
        if stack is None:
            service_error("ValidationError", "DescribeStacks", f"Stack with id {name} does not exist")
        query = option("--query", "")
        status = stack.get("_status", "CREATE_COMPLETE")
        if "OutputKey=='CacheBucket'" in query:
            print(stack.get("CacheBucket", "None"))
            sys.exit(0)
        if query == "Stacks[0].StackStatus":
            print(status)
            sys.exit(0)
        outputs = [{"OutputKey": k, "OutputValue": v} for k, v in stack.items() if not k.startswith("_")]
        out({"Stacks": [{"StackName": name, "StackStatus": status, "Outputs": outputs}]})
    if words == ["s3", "rm"]:
        s = state()
        s["bucket_objects"] = 0
        save(s)
        sys.exit(0)
    if words == ["sns", "list-subscriptions-by-topic"]:
        mode = os.environ.get("REHEARSAL_SUBSCRIBED", "0")
        topic = option("--topic-arn")
        subs = {
            "0": [],
            "1": [{"Protocol": "email", "Endpoint": "ops@example.com", "SubscriptionArn": f"{topic}:0f1e2d3c", "TopicArn": topic}],
            "pending": [{"Protocol": "email", "Endpoint": "ops@example.com", "SubscriptionArn": "PendingConfirmation", "TopicArn": topic}],
        }[mode]
        out({"Subscriptions": subs})
    del region
    unknown()


# --- docker ------------------------------------------------------------------------------------------------

def docker():
    record()
    if ARGS[:1] == ["info"]:
        print("Server Version: 27.3.1\nStorage Driver: overlayfs\n driver-type: io.containerd.snapshotter.v1")
        sys.exit(0)
    if ARGS[:1] in (["build"], ["push"], ["tag"], ["login"]) or ARGS[:2] == ["buildx", "build"]:
        sys.exit(0)
    unknown()


# --- npx (cdk) ---------------------------------------------------------------------------------------------

def context():
    pairs = {}
    for i, a in enumerate(ARGS):
        if a in ("-c", "--context") and i + 1 < len(ARGS):
            k, _, v = ARGS[i + 1].partition("=")
            pairs[k] = v
    return pairs


def npx():
    if "cdk" not in ARGS:
        # Anything else npx runs (the CDK app's own checks) is the real thing.
        here = os.path.dirname(os.path.abspath(sys.argv[0]))
        path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if os.path.abspath(p) != here)
        os.execvpe("npx", ["npx", *ARGS], {**os.environ, "PATH": path})
    record()
    if "--no-install" not in ARGS[: ARGS.index("cdk")]:
        print("rehearsal: npx would download cdk (no --no-install): the recipe must use the CDK app's own", file=sys.stderr)
        sys.exit(1)
    command = ARGS[ARGS.index("cdk") + 1 :]
    verb = next((a for a in command if not a.startswith("-")), None)
    ctx = context()
    s = state()
    region = os.environ.get("AWS_REGION", "us-east-1")
    if verb == "bootstrap":
        s["bootstrapped"] = True
        save(s)
        print(f" ✅  Environment aws://{ACCOUNT}/{region} bootstrapped.")
        sys.exit(0)
    if verb == "deploy":
        if ctx.get("requireBootstrap") == "true" and not s["bootstrapped"]:
            print(f"❌ EarshotGateway failed: Error: This stack uses assets, so the toolkit stack must be deployed to the environment (Run \"cdk bootstrap aws://{ACCOUNT}/{region}\")", file=sys.stderr)
            sys.exit(1)
        polly_only = ctx.get("pollyOnly") == "true"
        if not polly_only:
            # cdk-assets builds and pushes the Kokoro image with Docker, its child processes inheriting cdk's environment.
            tag = f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com/cdk-hnb659fds-container-assets-{ACCOUNT}-{region}:kokoro"
            for argv in (["docker", "build", "--tag", "cdkasset-kokoro", "--platform", "linux/amd64", "."], ["docker", "tag", "cdkasset-kokoro", tag], ["docker", "push", tag]):
                if subprocess.run(argv).returncode != 0:
                    sys.exit(1)
            s["images"].append(tag)
            s["stacks"]["EarshotKokoroModel"] = {"EndpointName": ctx.get("endpointName", "earshot-kokoro"), "ImageUri": tag, "InstanceType": ctx.get("instanceType", "ml.g5.xlarge")}
        if os.environ.get("REHEARSAL_DEPLOY") == "gateway_refused":
            # A new account's 10 concurrent executions: CloudFormation refuses the gateway's reservation after the
            # model stack (and its endpoint) is up, as cdk reports it.
            save(s)
            print("❌  EarshotGateway failed: Error: The stack named EarshotGateway failed creation, it may need to be manually deleted from the AWS console: "
                  "ROLLBACK_COMPLETE: Resource handler returned message: \"Specified ReservedConcurrentExecutions for function decreases account's "
                  "UnreservedConcurrentExecution below its minimum value of [10].\"", file=sys.stderr)
            s["stacks"]["EarshotGateway"] = {"_status": "ROLLBACK_COMPLETE"}
            save(s)
            sys.exit(1)
        topic = f"arn:aws:sns:{region}:{ACCOUNT}:EarshotGateway-AlarmTopic-R3H34RS4L"
        gateway = {
            "FunctionUrl": os.environ.get("REHEARSAL_FUNCTION_URL", f"https://abcdefgh.lambda-url.{region}.on.aws/"),
            "AuthType": ctx.get("authType", "AWS_IAM"),
            "LogGroup": "/aws/lambda/EarshotGateway-Function76856677-REHEARSAL",
            "Backends": "polly" if polly_only else "kokoro,polly",
            "CacheBucket": "earshotgateway-cachebucket-rehearsal",
            "AlarmTopicArn": topic,
        }
        s["stacks"]["EarshotGateway"] = gateway
        s["bucket_objects"] = 3
        save(s)
        outputs_file = option("--outputs-file")
        if outputs_file:
            os.makedirs(os.path.dirname(os.path.abspath(outputs_file)), exist_ok=True)
            with open(outputs_file, "w") as f:
                json.dump({name: values for name, values in s["stacks"].items()}, f, indent=2)
        print(" ✅  EarshotGateway")
        sys.exit(0)
    if verb == "destroy":
        if "--force" not in command:
            print("Are you sure you want to delete: EarshotGateway (y/n)? ", file=sys.stderr)
            sys.exit(1)
        if os.environ.get("REHEARSAL_DESTROY") == "fail":
            # As CloudFormation's DELETE_FAILED reaches cdk: a resource it could not delete (a role in use).
            print("❌ EarshotKokoroModel: destroy failed: Resource handler returned message: role in use (Service: Iam, Status Code: 409)", file=sys.stderr)
            sys.exit(1)
        if s["bucket_objects"] > 0 and "EarshotGateway" in s["stacks"]:
            print("❌ EarshotGateway: destroy failed: The bucket you tried to delete is not empty", file=sys.stderr)
            sys.exit(1)
        s["stacks"] = {}
        save(s)
        print(" ✅  EarshotGateway: destroyed")
        sys.exit(0)
    unknown()


# --- cargo, rustup -----------------------------------------------------------------------------------------

def cargo():
    record()
    if ARGS[:2] == ["lambda", "build"]:
        target = os.path.join(option("--lambda-dir"), "bootstrap")
        os.makedirs(target, exist_ok=True)
        with open(os.path.join(target, "bootstrap"), "w") as f:
            f.write("a rehearsal's bootstrap\n")
        sys.exit(0)
    if ARGS[:1] in (["fetch"], ["build"]):
        sys.exit(0)
    unknown()


def rustup():
    record()
    if ARGS[:3] == ["target", "list", "--installed"]:
        print("x86_64-unknown-linux-gnu\naarch64-unknown-linux-gnu")
        sys.exit(0)
    unknown()


def uname():
    record()
    print("Darwin" if ARGS[:1] == ["-s"] else "Darwin Kernel Version 24.1.0")
    sys.exit(0)


def brew():
    record()
    if ARGS[:1] == ["install"]:
        sys.exit(0)
    unknown()


{"aws": aws, "docker": docker, "npx": npx, "cargo": cargo, "rustup": rustup, "uname": uname, "brew": brew}.get(NAME, unknown)()
