"""Label and resource names Karpenter treats specially (karpenter v1.14 + karpenter-provider-aws).

Sources: sigs.k8s.io/karpenter pkg/apis/v1/labels.go and aws/karpenter-provider-aws pkg/apis/v1/labels.go.
"""

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
WINDOWS_BUILD = "node.kubernetes.io/windows-build"

NODEPOOL = "karpenter.sh/nodepool"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
REGISTERED = "karpenter.sh/registered"
INITIALIZED = "karpenter.sh/initialized"
NODECLASS = "karpenter.k8s.aws/ec2nodeclass"

AWS = "karpenter.k8s.aws/"
INSTANCE_CATEGORY = AWS + "instance-category"
INSTANCE_FAMILY = AWS + "instance-family"
INSTANCE_GENERATION = AWS + "instance-generation"
INSTANCE_SIZE = AWS + "instance-size"
INSTANCE_CPU = AWS + "instance-cpu"
INSTANCE_CPU_MANUFACTURER = AWS + "instance-cpu-manufacturer"
INSTANCE_MEMORY = AWS + "instance-memory"
INSTANCE_NETWORK_BANDWIDTH = AWS + "instance-network-bandwidth"
INSTANCE_LOCAL_NVME = AWS + "instance-local-nvme"
INSTANCE_HYPERVISOR = AWS + "instance-hypervisor"
INSTANCE_CAPABILITY_FLEX = AWS + "instance-capability-flex"
INSTANCE_GPU_NAME = AWS + "instance-gpu-name"
INSTANCE_GPU_MANUFACTURER = AWS + "instance-gpu-manufacturer"
INSTANCE_GPU_COUNT = AWS + "instance-gpu-count"
INSTANCE_GPU_MEMORY = AWS + "instance-gpu-memory"
INSTANCE_ACCELERATOR_NAME = AWS + "instance-accelerator-name"
INSTANCE_ACCELERATOR_MANUFACTURER = AWS + "instance-accelerator-manufacturer"
INSTANCE_ACCELERATOR_COUNT = AWS + "instance-accelerator-count"
INSTANCE_TENANCY = AWS + "instance-tenancy"
CAPACITY_RESERVATION_ID = AWS + "capacity-reservation-id"
CAPACITY_RESERVATION_TYPE = AWS + "capacity-reservation-type"
CAPACITY_RESERVATION_INTERRUPTIBLE = AWS + "capacity-reservation-interruptible"

CAPACITY_TYPE_SPOT = "spot"
CAPACITY_TYPE_ON_DEMAND = "on-demand"
CAPACITY_TYPE_RESERVED = "reserved"
# Karpenter launches reserved first, then spot, then on-demand, among the types a NodeClaim allows.
CAPACITY_TYPE_PRIORITY = (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND)

# Labels a pod may require even though a NodePool does not mention them: the cloud provider
# (instance types and offerings) defines their values.
WELL_KNOWN_LABELS = frozenset({
    NODEPOOL, ZONE, REGION, INSTANCE_TYPE, ARCH, OS, CAPACITY_TYPE, WINDOWS_BUILD,
    CAPACITY_RESERVATION_ID, CAPACITY_RESERVATION_TYPE, CAPACITY_RESERVATION_INTERRUPTIBLE,
    INSTANCE_HYPERVISOR, AWS + "instance-encryption-in-transit-supported", AWS + "nitro-sandbox",
    INSTANCE_CATEGORY, INSTANCE_CAPABILITY_FLEX, INSTANCE_FAMILY, INSTANCE_GENERATION, INSTANCE_SIZE,
    INSTANCE_LOCAL_NVME, INSTANCE_CPU, INSTANCE_CPU_MANUFACTURER,
    AWS + "instance-cpu-sustained-clock-speed-mhz", INSTANCE_MEMORY, AWS + "instance-ebs-bandwidth",
    INSTANCE_NETWORK_BANDWIDTH, INSTANCE_GPU_NAME, INSTANCE_GPU_MANUFACTURER, INSTANCE_GPU_COUNT,
    INSTANCE_GPU_MEMORY, INSTANCE_ACCELERATOR_NAME, INSTANCE_ACCELERATOR_MANUFACTURER,
    INSTANCE_ACCELERATOR_COUNT, "topology.k8s.aws/zone-id", INSTANCE_TENANCY,
    AWS + "placement-group-id", AWS + "placement-group-partition",
})

# Labels that may never be set by a NodePool (Karpenter assigns them itself).
RESTRICTED_LABELS = frozenset({HOSTNAME})

# Deprecated aliases Karpenter rewrites before comparing requirements.
NORMALIZED_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "beta.kubernetes.io/arch": ARCH,
    "beta.kubernetes.io/os": OS,
    "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
    "failure-domain.beta.kubernetes.io/region": REGION,
}

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
NODES = "nodes"
NVIDIA_GPU = "nvidia.com/gpu"
AMD_GPU = "amd.com/gpu"
HABANA_GAUDI = "habana.ai/gaudi"
AWS_NEURON = "aws.amazon.com/neuron"
