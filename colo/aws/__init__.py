"""boto3-side code: reading model profiles and weights from S3, and checking the AWS side before deploying."""
