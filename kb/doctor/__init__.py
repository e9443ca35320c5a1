"""`kb doctor`: the facts of this machine (kb.doctor.facts) and which cells apply to it, judged
from the records alone (kb.doctor.diagnose). Never imports the page renderer."""
