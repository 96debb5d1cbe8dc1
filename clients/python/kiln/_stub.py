"""The kiln.v1.Kiln service stub, written on grpcio's generic channel API.

grpc_tools' generated service modules check the grpcio version they were made
for; this one needs only ``channel.unary_unary`` / ``channel.unary_stream``,
which every grpcio release has, and the protoc-generated message classes.
"""
from ._proto.v1 import service_pb2 as pb

SERVICE = "kiln.v1.Kiln"

# name -> (streams its response, request class, response class); the same order
# as service.proto.
METHODS = {
    "Compile": (False, pb.CompileRequest, pb.CompileResponse),
    "GetArtifact": (True, pb.GetArtifactRequest, pb.ArtifactChunk),
    "Tune": (True, pb.TuneRequest, pb.TuneEvent),
    "LookupBest": (False, pb.LookupBestRequest, pb.LookupBestResponse),
    "Benchmark": (False, pb.BenchmarkRequest, pb.BenchmarkResponse),
    "GetJob": (False, pb.GetJobRequest, pb.Job),
    "WatchJob": (True, pb.WatchJobRequest, pb.Job),
    "CancelJob": (False, pb.CancelJobRequest, pb.CancelJobResponse),
    "ListJobs": (False, pb.ListJobsRequest, pb.ListJobsResponse),
    "ListDevices": (False, pb.ListDevicesRequest, pb.ListDevicesResponse),
    "ListMeasurements": (False, pb.ListMeasurementsRequest, pb.ListMeasurementsResponse),
    "CacheStats": (False, pb.CacheStatsRequest, pb.CacheStatsResponse),
    "GetVersion": (False, pb.GetVersionRequest, pb.GetVersionResponse),
    "Echo": (False, pb.EchoRequest, pb.EchoResponse),
}


class KilnStub:
    """One callable attribute per RPC, as grpc_tools' stubs have."""

    def __init__(self, channel):
        for name, (streaming, request, response) in METHODS.items():
            factory = channel.unary_stream if streaming else channel.unary_unary
            setattr(self, name, factory(f"/{SERVICE}/{name}",
                                        request_serializer=request.SerializeToString,
                                        response_deserializer=response.FromString))
