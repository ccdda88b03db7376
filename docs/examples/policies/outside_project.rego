# Writes outside the project: writing or editing a file that is not under the session's
# project root (hookd's `input.project`, which the model cannot move with `cd`). Reads are
# not limited here. Denied on every host.
package hookd.outside_project

import rego.v1

# Directories outside the project that may be written all the same.
writable := ["/tmp/"]

deny contains sprintf("%s is outside the project %s: writes stay in the project", [path, input.project]) if {
	input.tool.kind in {"write", "edit"}
	some path in input.tool.outside_project
	not writable_path(path)
}

writable_path(path) if {
	some prefix in writable
	startswith(path, prefix)
}

test_write_outside_denied if {
	count(deny) == 1 with input as {"project": "/p", "tool": {"kind": "write", "outside_project": ["/etc/hosts"]}}
	count(deny) == 1 with input as {"project": "/p", "tool": {"kind": "edit", "outside_project": ["/home/u/.bashrc"]}}
}

test_write_inside_or_tmp_allowed if {
	count(deny) == 0 with input as {"project": "/p", "tool": {"kind": "write", "outside_project": []}}
	count(deny) == 0 with input as {"project": "/p", "tool": {"kind": "write", "outside_project": ["/tmp/scratch.txt"]}}
}

test_reads_not_limited if {
	count(deny) == 0 with input as {"project": "/p", "tool": {"kind": "read", "outside_project": ["/etc/hosts"]}}
}
