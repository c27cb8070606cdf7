"""Storage objects the volume topology reads: PersistentVolumeClaim, PersistentVolume, StorageClass
(core/v1 and storage.k8s.io/v1), and the volume references of a pod spec."""
from __future__ import annotations

from kubefacts import labels as L
from ..models import StorageClass, Volume, VolumeClaim
from ..scheduling.requirements import Requirement, Requirements
from .fields import Ctx

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def _node_selector_terms(ctx: Ctx, value, path: str) -> tuple:
    return tuple(ctx.requirements(ctx.mapping(t, f"{path}[{i}]").get("matchExpressions"), f"{path}[{i}].matchExpressions")
                 for i, t in enumerate(ctx.sequence(value, path)))


# csi-translation-lib: in-tree volume sources and provisioners (kubernetes.io/<name>) and the CSI
# drivers that replace them.
_TRANSLATED = (("awsElasticBlockStore", "aws-ebs", "ebs.csi.aws.com"),
               ("gcePersistentDisk", "gce-pd", "pd.csi.storage.gke.io"),
               ("azureDisk", "azure-disk", "disk.csi.azure.com"), ("azureFile", "azure-file", "file.csi.azure.com"),
               ("cinder", "cinder", "cinder.csi.openstack.org"),
               ("vsphereVolume", "vsphere-volume", "csi.vsphere.vmware.com"),
               ("portworxVolume", "portworx-volume", "pxd.portworx.com"))
IN_TREE = {key: driver for source, plugin, driver in _TRANSLATED for key in (source, f"kubernetes.io/{plugin}")}


def load_csinode(obj: dict, ctx: Ctx) -> tuple[str, dict]:
    """(node name, {driver: attachable count}) of a storage.k8s.io/v1 CSINode."""
    metadata = ctx.mapping(obj.get("metadata"), "metadata")
    limits = {}
    drivers = ctx.sequence(ctx.mapping(obj.get("spec"), "spec").get("drivers"), "spec.drivers")
    for i, driver in enumerate(drivers):
        driver = ctx.mapping(driver, f"spec.drivers[{i}]")
        allocatable = ctx.mapping(driver.get("allocatable"), f"spec.drivers[{i}].allocatable")
        count = ctx.integer(allocatable.get("count"), f"spec.drivers[{i}].allocatable.count")
        if count is not None:
            limits[ctx.string(driver.get("name"), f"spec.drivers[{i}].name")] = count
    return ctx.string(metadata.get("name"), "metadata.name"), limits


def load_claim(obj: dict, ctx: Ctx) -> VolumeClaim:
    metadata, spec, status = ctx.parts(obj, "metadata", "spec", "status")
    annotations = ctx.mapping(metadata.get("annotations"), "metadata.annotations")
    volume_name = ctx.string(spec.get("volumeName"), "spec.volumeName")
    return VolumeClaim(
        namespace=ctx.string(metadata.get("namespace"), "metadata.namespace", "default"),
        name=ctx.string(metadata.get("name"), "metadata.name"),
        volume_name=volume_name,
        storage_class=ctx.string(spec.get("storageClassName"), "spec.storageClassName"),
        deleting=metadata.get("deletionTimestamp") is not None,
        lost=status.get("phase") == "Lost",
        # Manifests written by hand carry no annotation; only a claim read from a cluster
        # (it has status) is held to the bind-completed check.
        bind_completed=not volume_name or not status or BIND_COMPLETED in annotations,
    )


def load_volume(obj: dict, ctx: Ctx) -> Volume:
    metadata, spec = ctx.parts(obj, "metadata", "spec")
    affinity = ctx.mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
    required = ctx.mapping(affinity.get("required"), "spec.nodeAffinity.required")
    return Volume(
        name=ctx.string(metadata.get("name"), "metadata.name"),
        terms=_node_selector_terms(ctx, required.get("nodeSelectorTerms"), "spec.nodeAffinity.required.nodeSelectorTerms"),
        local=spec.get("local") is not None or spec.get("hostPath") is not None,
        deleting=metadata.get("deletionTimestamp") is not None,
        driver=(ctx.string(ctx.mapping(spec.get("csi"), "spec.csi").get("driver"), "spec.csi.driver")
                or next((d for source, d in IN_TREE.items() if spec.get(source) is not None), "")),
    )


def load_storage_class(obj: dict, ctx: Ctx) -> tuple[StorageClass, bool]:
    """The StorageClass and whether it is the cluster's default."""
    metadata = ctx.mapping(obj.get("metadata"), "metadata")
    annotations = ctx.mapping(metadata.get("annotations"), "metadata.annotations")
    alternatives = []
    for i, term in enumerate(ctx.sequence(obj.get("allowedTopologies"), "allowedTopologies")):
        path = f"allowedTopologies[{i}].matchLabelExpressions"
        reqs = []
        for j, expr in enumerate(ctx.sequence(ctx.mapping(term, f"allowedTopologies[{i}]").get("matchLabelExpressions"), path)):
            expr = ctx.mapping(expr, f"{path}[{j}]")
            key = ctx.string(expr.get("key"), f"{path}[{j}].key")
            values = [ctx.string(v, f"{path}[{j}].values") for v in ctx.sequence(expr.get("values"), f"{path}[{j}].values")]
            reqs.append(Requirement(L.NORMALIZED_LABELS.get(key, key), False, frozenset(values)))
        if reqs:
            alternatives.append(Requirements(reqs))
    provisioner = ctx.string(obj.get("provisioner"), "provisioner")
    sc = StorageClass(ctx.string(metadata.get("name"), "metadata.name"),
                      ctx.string(obj.get("volumeBindingMode"), "volumeBindingMode", "Immediate"), tuple(alternatives),
                      IN_TREE.get(provisioner, provisioner))
    return sc, str(annotations.get(DEFAULT_CLASS, "")).lower() == "true"


def volume_refs(ctx: Ctx, spec: object, path: str) -> tuple:
    """("pvc", claimName) or ("ephemeral", volume name, storageClassName) per volume of a pod spec."""
    refs: list[tuple[str, ...]] = []
    for i, vol in enumerate(ctx.sequence(ctx.mapping(spec, path).get("volumes"), f"{path}.volumes")):
        vol = ctx.mapping(vol, f"{path}.volumes[{i}]")
        if vol.get("persistentVolumeClaim") is not None:
            pvc = ctx.mapping(vol.get("persistentVolumeClaim"), f"{path}.volumes[{i}].persistentVolumeClaim")
            refs.append(("pvc", ctx.string(pvc.get("claimName"), f"{path}.volumes[{i}].persistentVolumeClaim.claimName")))
        elif vol.get("ephemeral") is not None:
            tpl = ctx.mapping(ctx.mapping(vol.get("ephemeral"), f"{path}.volumes[{i}].ephemeral").get("volumeClaimTemplate"),
                              f"{path}.volumes[{i}].ephemeral.volumeClaimTemplate")
            tspec = ctx.mapping(tpl.get("spec"), f"{path}.volumes[{i}].ephemeral.volumeClaimTemplate.spec")
            refs.append(("ephemeral", ctx.string(vol.get("name"), f"{path}.volumes[{i}].name"),
                         ctx.string(tspec.get("storageClassName"), "storageClassName")))
    return tuple(refs)


def claim_templates(ctx: Ctx, spec: dict) -> tuple:
    """A StatefulSet's volumeClaimTemplates as (name, storageClassName)."""
    out = []
    for i, tpl in enumerate(ctx.sequence(spec.get("volumeClaimTemplates"), "spec.volumeClaimTemplates")):
        tpl = ctx.mapping(tpl, f"spec.volumeClaimTemplates[{i}]")
        meta = ctx.mapping(tpl.get("metadata"), f"spec.volumeClaimTemplates[{i}].metadata")
        tspec = ctx.mapping(tpl.get("spec"), f"spec.volumeClaimTemplates[{i}].spec")
        out.append((ctx.string(meta.get("name"), f"spec.volumeClaimTemplates[{i}].metadata.name"),
                    ctx.string(tspec.get("storageClassName"), f"spec.volumeClaimTemplates[{i}].spec.storageClassName")))
    return tuple(out)
