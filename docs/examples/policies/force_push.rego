# Force pushes: `git push --force` (or -f, --force-with-lease, +refspec) is denied; a plain
# push to a protected branch (data.protected_branches, default main and master) asks the user.
package hookd.force_push

import rego.v1

command := input.tool.command if input.tool.kind == "shell"

pushes if {
	contains(command, "push")
	regex.match(`(^|[;&|\s])git(\s+-C\s+\S+)?\s+push(\s|$)`, command)
}

protected := object.get(data, "protected_branches", ["main", "master"])

deny contains "force pushes are not allowed: rebase and push normally, or ask the user" if {
	pushes
	regex.match(`\spush\b.*(\s--force(-with-lease)?(=\S*)?(\s|$)|\s-[a-zA-Z]*f[a-zA-Z]*(\s|$)|\s\+\S+)`, command)
}

ask contains sprintf("pushing to the protected branch %s", [branch]) if {
	pushes
	some branch in protected
	regex.match(sprintf(`\spush\s+(\S+\s+)?(HEAD:)?%s(\s|$)`, [branch]), command)
}

test_force_push_denied if {
	count(deny) == 1 with input as {"tool": {"kind": "shell", "command": "git push --force origin feature"}}
	count(deny) == 1 with input as {"tool": {"kind": "shell", "command": "git push -f"}}
	count(deny) == 1 with input as {"tool": {"kind": "shell", "command": "git push origin +main"}}
	count(deny) == 1 with input as {"tool": {"kind": "shell", "command": "git -C repo push --force-with-lease"}}
}

test_plain_push_allowed if {
	count(deny) == 0 with input as {"tool": {"kind": "shell", "command": "git push origin feature"}}
	count(ask) == 0 with input as {"tool": {"kind": "shell", "command": "git push origin feature"}}
}

test_push_to_main_asks if {
	count(ask) == 1 with input as {"tool": {"kind": "shell", "command": "git push origin main"}}
}

test_protected_branches_from_data if {
	count(ask) == 1 with input as {"tool": {"kind": "shell", "command": "git push origin release"}}
		with data.protected_branches as ["release"]
}
