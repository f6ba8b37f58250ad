"""The base role's firewall step: the modules of the firewalls do the changes, from base_report's decision only.

The step used to run ``firewall-cmd --add-port`` / ``ufw allow <port>/tcp``, which opened the port to everyone.
"""

from task_files import load, tasks

FIREWALL = "roles/base/tasks/firewall.yml"


def _module(task):
    return next(key for key in task if "." in key)


def test_only_the_probes_are_commands_and_they_change_nothing():
    commands = [t for t in tasks(load(FIREWALL)) if _module(t) == "ansible.builtin.command"]
    # the second reads the zone of the cluster's NIC (firewalld), which decides default_deny for it
    assert [t["name"] for t in commands] == ["Check whether the platform firewall is active",
                                             "List firewalld's zones and their interfaces"]
    assert all(command["changed_when"] is False and command["check_mode"] is False for command in commands)
    assert commands[1]["ansible.builtin.command"]["argv"] == ["firewall-cmd", "--list-all-zones"]


def test_firewalls_are_changed_by_their_modules_from_the_decision():
    changes = [(t["name"], _module(t), t["loop"]) for t in tasks(load(FIREWALL))
               if _module(t) in ("ansible.posix.firewalld", "community.general.ufw")]
    assert changes == [
        ("Allow the ports from the listed sources in firewalld", "ansible.posix.firewalld", "{{ __base_firewall_report.rules }}"),
        ("Remove firewalld's allow-from-anywhere rule for the managed ports", "ansible.posix.firewalld",
         "{{ __base_firewall_report.close }}"),
        ("Allow the ports from the listed sources in ufw", "community.general.ufw", "{{ __base_firewall_report.rules }}"),
        ("Remove ufw's allow-from-anywhere rule for the managed ports", "community.general.ufw",
         "{{ __base_firewall_report.close }}"),
    ]


def test_every_allow_names_its_source():
    for t in tasks(load(FIREWALL)):
        args = t.get("ansible.posix.firewalld") or t.get("community.general.ufw")
        if args and not args.get("delete") and args.get("state") != "disabled":
            assert args.get("rich_rule") == "{{ item.rich_rule }}" or args.get("from_ip") == "{{ item.source }}"
