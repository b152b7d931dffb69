"""Infrastructure as data: ``template.yaml`` read by Python.

``lambda_workflows.infra.template`` parses the SAM template (CloudFormation tags included);
``lambda_workflows.infra.provision`` creates its table, queues and schedule group in any boto3
session, moto included, so tests and the local runtime use exactly what is deployed.
"""

from .provision import Resources, provision
from .template import load_template

__all__ = ["Resources", "load_template", "provision"]
