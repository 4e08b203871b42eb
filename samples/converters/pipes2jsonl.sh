#!/bin/sh
# pipes2jsonl.sh FILE: an exec converter for jobdrop.
#
# Reads a pipe-separated job list as some mainframe schedulers export it,
#   # comment
#   NAME|EVERY|UNIT|COMMAND
#   nightly-extract|1|DAYS|/opt/batch/extract.sh
# and prints one TaskDefinition JSON object per line on standard output.
# HOST and TOPIC come from the environment (defaults: acme, batch-jobs).
# Exits non-zero with a message on standard error when the file cannot be
# read; jobdrop then fails the file and shows that message.
set -eu
file=${1:?usage: pipes2jsonl.sh FILE}
[ -r "$file" ] || { echo "pipes2jsonl: cannot read $file" >&2; exit 2; }
host=${HOST:-acme}
topic=${TOPIC:-batch-jobs}

# JSON string escaping for the few characters a command line may hold.
esc() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'; }

while IFS='|' read -r name every unit command || [ -n "$name" ]; do
	case $name in ''|'#'*) continue ;; esac
	printf '{"host":"%s","name":"%s","action":"INSERT","frequency":{"timeUnit":"%s","time":%s},"topic":"%s","start":null,"data":{"command":"%s"}}\n' \
		"$(esc "$host")" "$(esc "$name")" "$(esc "$unit")" "$every" "$(esc "$topic")" "$(esc "$command")"
done < "$file"
