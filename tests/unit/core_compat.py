"""What the unit tests need from ansible-core and that older releases spell differently.

scripts/core-versions.sh runs the unit suite on every ansible-core minor that
meta/runtime.yml claims; only these names differ between them.
"""

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core < 2.19: every string is templated, there is no trust marker.
    def trust_as_template(value):
        return value


def evaluate_conditional(templar, conditional):
    """``templar.evaluate_conditional(conditional)`` (ansible-core 2.19), or what a task's ``when`` does before it."""
    if hasattr(templar, "evaluate_conditional"):
        return templar.evaluate_conditional(conditional)
    from ansible.parsing.dataloader import DataLoader
    from ansible.playbook.conditional import Conditional

    return Conditional(loader=DataLoader())._check_conditional(conditional, templar, templar.available_variables)


__all__ = ["evaluate_conditional", "trust_as_template"]
