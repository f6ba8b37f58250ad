"""Test helper module: return its ``facts`` argument as ``ansible_facts``.

The role reads ``ansible_facts[...]``; a module is the one way a play can put
made-up values there (set_fact writes host variables, not facts), so the unit
tests can resolve the role's variables for platforms they do not run on.
"""

from ansible.module_utils.basic import AnsibleModule


def main() -> None:
    module = AnsibleModule(argument_spec={"facts": {"type": "dict", "required": True}}, supports_check_mode=True)
    module.exit_json(changed=False, ansible_facts=module.params["facts"])


if __name__ == "__main__":
    main()
