"""A Python gRPC client of Atrium, driven by test/transport/python-client.test.ts.

Usage: python3 atrium_client.py '<json config>'

The config names the directory of the stubs generated from proto/ at test time (protoc +
grpc_python_plugin), the server's host:port, the keys, and files the test uploaded over REST.
The script calls the server the way a Python backend would, and prints ONE JSON object describing
what it observed (values, codes, ErrorInfo details). It asserts nothing itself: the TypeScript
test checks the report, so a failure shows expected vs. actual in one place. An unexpected
exception is reported as {"fatal": "..."} with exit status 1.
"""

import hashlib
import json
import sys
import threading
import time
import traceback


def main() -> dict:
    cfg = json.loads(sys.argv[1])
    sys.path.insert(0, cfg["stubs"])

    import grpc  # noqa: E402  (Debian: python3-grpcio)
    from atrium.v1 import files_pb2, files_pb2_grpc  # noqa: E402
    from atrium.v1 import models_pb2, models_pb2_grpc  # noqa: E402
    from atrium.v1 import options_pb2  # noqa: E402
    from atrium.v1 import uploads_pb2, uploads_pb2_grpc  # noqa: E402
    from google.rpc import status_pb2  # noqa: E402

    def meta(key, **headers):
        m = [] if key is None else [("authorization", "Bearer " + key)]
        return m + [(k.replace("_", "-"), v) for k, v in headers.items()]

    def error_of(e):
        info = None
        for k, v in e.trailing_metadata() or ():
            if k == "grpc-status-details-bin":
                status = status_pb2.Status.FromString(v)
                for d in status.details:
                    if d.Is(options_pb2.ErrorInfo.DESCRIPTOR):
                        ei = options_pb2.ErrorInfo()
                        d.Unpack(ei)
                        info = {
                            "type": ei.type,
                            "param": ei.param if ei.HasField("param") else None,
                            "code": ei.code if ei.HasField("code") else None,
                            "http_status": ei.http_status,
                        }
        return {"status": e.code().name, "message": e.details(), "info": info}

    def attempt(fn):
        try:
            r = fn()
            return {"status": "OK", "value": r}
        except grpc.RpcError as e:
            return error_of(e)

    def file_dict(f):
        return {
            "id": f.id,
            "object": f.object,
            "bytes": f.bytes,
            "created_at": f.created_at,
            "filename": f.filename,
            "purpose": f.purpose,
            "status": f.status,
            "expires_at": f.expires_at if f.HasField("expires_at") else None,
        }

    def download(stub, file_id, md, rng=""):
        h = hashlib.sha256()
        n = 0
        chunks = 0
        head = None
        for c in stub.GetFileContent(files_pb2.GetFileContentRequest(file_id=file_id, range=rng), metadata=md, timeout=20):
            if head is None:
                ranges = []
                for ext in c.extensions:
                    cr = options_pb2.ContentRange()
                    if ext.Unpack(cr):
                        ranges.append({"size": cr.size, "partial": cr.partial, "start": cr.start, "end": cr.end})
                head = {"content_type": c.content_type, "ranges": ranges}
            elif c.content_type or len(c.extensions):
                head["later_chunk_has_head"] = True
            h.update(c.data)
            n += len(c.data)
            chunks += 1
        return {"sha256": h.hexdigest(), "bytes": n, "chunks": chunks, "head": head}

    out = {"python": sys.version.split()[0], "grpc": grpc.__version__}
    with grpc.insecure_channel(cfg["target"]) as channel:
        files = files_pb2_grpc.FilesServiceStub(channel)
        uploads = uploads_pb2_grpc.UploadsServiceStub(channel)
        models = models_pb2_grpc.ModelsServiceStub(channel)
        me = meta(cfg["key"])

        # Upload over the client-streaming CreateFile: metadata first, then 64 KiB chunks.
        content = bytes((i * 7 + 3) % 251 for i in range(cfg["upload_bytes"]))

        def requests():
            yield files_pb2.CreateFileRequest(purpose="assistants", filename="from-python.txt")
            for i in range(0, len(content), 65536):
                yield files_pb2.CreateFileRequest(chunk=content[i : i + 65536])

        created = files.CreateFile(requests(), metadata=me, timeout=20)
        out["created"] = file_dict(created)
        out["uploaded_sha256"] = hashlib.sha256(content).hexdigest()

        listed = files.ListFiles(files_pb2.ListFilesRequest(), metadata=me, timeout=20)
        out["list"] = {"object": listed.object, "ids": [f.id for f in listed.data], "has_more": listed.has_more}
        out["get"] = file_dict(files.GetFile(files_pb2.GetFileRequest(file_id=created.id), metadata=me, timeout=20))
        out["download"] = download(files, created.id, me)
        out["download_range"] = download(files, created.id, me, "bytes=100-199")
        out["rest_file"] = {
            "get": file_dict(files.GetFile(files_pb2.GetFileRequest(file_id=cfg["rest_file_id"]), metadata=me, timeout=20)),
            "download": download(files, cfg["rest_file_id"], me),
        }

        m = models.GetModel(models_pb2.GetModelRequest(model="gpt-4o"), metadata=me, timeout=20)
        out["model"] = {
            "id": m.id,
            "object": m.object,
            "created": m.created,
            "owned_by": m.owned_by,
            "shutdown_date": m.shutdown_date if m.HasField("shutdown_date") else None,
        }
        out["model_count"] = len(models.ListModels(models_pb2.ListModelsRequest(), metadata=me, timeout=20).data)

        # Uploads: create, two streamed parts, complete with the md5 of the whole.
        up_data = bytes((i * 13) % 256 for i in range(150_000))
        up = uploads.CreateUpload(
            uploads_pb2.CreateUploadRequest(bytes=len(up_data), filename="up.jsonl", mime_type="application/jsonl", purpose="fine-tune"),
            metadata=me,
            timeout=20,
        )

        def part(lo, hi):
            yield uploads_pb2.AddUploadPartRequest(upload_id=up.id, data=up_data[lo : lo + 1000])
            yield uploads_pb2.AddUploadPartRequest(data=up_data[lo + 1000 : hi])

        p1 = uploads.AddUploadPart(part(0, 80_000), metadata=me, timeout=20)
        p2 = uploads.AddUploadPart(part(80_000, 150_000), metadata=me, timeout=20)
        done = uploads.CompleteUpload(
            uploads_pb2.CompleteUploadRequest(upload_id=up.id, part_ids=[p1.id, p2.id], md5=hashlib.md5(up_data).hexdigest()),
            metadata=me,
            timeout=20,
        )
        out["upload"] = {
            "status": done.status,
            "file": file_dict(done.file),
            "sha256": hashlib.sha256(up_data).hexdigest(),
            "download": download(files, done.file.id, me),
        }

        # Cancellation mid-stream: grpcio sends RST_STREAM without END_STREAM, so the server must
        # drop what it received (the test then checks that no file, part, blob or temp file stays).
        def cancelled_midway(call, first):
            gate = threading.Event()

            def requests():
                yield first
                for _ in range(16):
                    yield first.__class__(**{("chunk" if hasattr(first, "chunk") else "data"): b"x" * 65536})
                gate.wait(10)  # hold the stream open until cancelled

            fut = call.future(requests(), metadata=me, timeout=20)
            time.sleep(0.5)
            fut.cancel()
            gate.set()
            try:
                fut.result(timeout=5)
                return "completed"
            except grpc.FutureCancelledError:
                return "CANCELLED"
            except grpc.RpcError as e:
                return e.code().name + ": " + str(e.details())

        def new_upload(name, size):
            return uploads.CreateUpload(
                uploads_pb2.CreateUploadRequest(bytes=size, filename=name, mime_type="text/plain", purpose="assistants"), metadata=me, timeout=20
            )

        def upload_now(up):
            # A part streamed into an (already created) Upload right after a cancelled call, while
            # the server is still cleaning that one up; then completed with md5 and read back.
            data = bytes((i * 31 + len(up.filename)) % 256 for i in range(up.bytes))

            def parts():
                yield uploads_pb2.AddUploadPartRequest(upload_id=up.id, data=data[:65536])
                for i in range(65536, len(data), 65536):
                    time.sleep(0.02)
                    yield uploads_pb2.AddUploadPartRequest(data=data[i : i + 65536])

            try:
                part = uploads.AddUploadPart(parts(), metadata=me, timeout=20)
                done = uploads.CompleteUpload(
                    uploads_pb2.CompleteUploadRequest(upload_id=up.id, part_ids=[part.id], md5=hashlib.md5(data).hexdigest()), metadata=me, timeout=20
                )
            except grpc.RpcError as e:
                return {"status": e.code().name, "message": e.details()}
            got = download(files, done.file.id, me)
            return {"status": "OK", "bytes": done.file.bytes, "same": got["sha256"] == hashlib.sha256(data).hexdigest()}

        # Created beforehand, so each follow-up call goes out at once after the cancel.
        pending = new_upload("never.txt", 10_000_000)
        after1 = new_upload("after-cancel-1.txt", 1_000_000)
        after2 = new_upload("after-cancel-2.txt", 1_000_000)
        cancel = {}
        cancel["create_file"] = cancelled_midway(files.CreateFile, files_pb2.CreateFileRequest(purpose="user_data", filename="py-cancelled.bin"))
        cancel["add_part"] = cancelled_midway(uploads.AddUploadPart, uploads_pb2.AddUploadPartRequest(upload_id=pending.id))
        cancel["upload_after_add_part"] = upload_now(after1)
        cancel["create_file_2"] = cancelled_midway(files.CreateFile, files_pb2.CreateFileRequest(purpose="user_data", filename="py-cancelled-2.bin"))
        cancel["upload_after_create_file"] = upload_now(after2)
        time.sleep(0.3)
        cancel["files_after"] = [f.filename for f in files.ListFiles(files_pb2.ListFilesRequest(), metadata=me, timeout=20).data]
        out["cancel"] = cancel

        # Errors: the status code and the atrium.v1.ErrorInfo detail.
        out["errors"] = {
            "not_found": attempt(lambda: files.GetFile(files_pb2.GetFileRequest(file_id="file-nope"), metadata=me, timeout=20)),
            "invalid_limit": attempt(lambda: files.ListFiles(files_pb2.ListFilesRequest(limit=0), metadata=me, timeout=20)),
            "no_key": attempt(lambda: models.GetModel(models_pb2.GetModelRequest(model="gpt-4o"), metadata=meta(None), timeout=20)),
            "bad_key": attempt(lambda: models.GetModel(models_pb2.GetModelRequest(model="gpt-4o"), metadata=meta("sk-bad-bad-bad"), timeout=20)),
            "reader_write": attempt(
                lambda: files.DeleteFile(files_pb2.DeleteFileRequest(file_id=created.id), metadata=meta(cfg["reader_key"]), timeout=20)
            ),
            "range": attempt(lambda: download(files, created.id, me, "bytes=999999999-")),
        }

        # Tenancy: another project's key, and a multi-project key selecting projects by metadata.
        other = meta(cfg["project_b_key"])
        out["tenancy"] = {
            "other_get": attempt(lambda: files.GetFile(files_pb2.GetFileRequest(file_id=cfg["rest_file_id"]), metadata=other, timeout=20)),
            "other_content": attempt(lambda: download(files, cfg["rest_file_id"], other)),
            "other_delete": attempt(lambda: files.DeleteFile(files_pb2.DeleteFileRequest(file_id=cfg["rest_file_id"]), metadata=other, timeout=20)),
            "other_list_ids": [f.id for f in files.ListFiles(files_pb2.ListFilesRequest(), metadata=other, timeout=20).data],
            "multi_default": attempt(lambda: files.GetFile(files_pb2.GetFileRequest(file_id=cfg["rest_file_id"]), metadata=meta(cfg["multi_key"]), timeout=20).id),
        }
        for header in ("vendor-project", "openai-project"):
            md = meta(cfg["multi_key"]) + [(header, "proj_b")]
            out["tenancy"][header] = {
                "b_file": attempt(lambda: files.GetFile(files_pb2.GetFileRequest(file_id=cfg["b_file_id"]), metadata=md, timeout=20).id),
                "a_file": attempt(lambda: files.GetFile(files_pb2.GetFileRequest(file_id=cfg["rest_file_id"]), metadata=md, timeout=20).id),
            }
    return out


if __name__ == "__main__":
    try:
        print(json.dumps(main()))
    except Exception:  # noqa: BLE001  (report anything unexpected to the test)
        print(json.dumps({"fatal": traceback.format_exc()}))
        sys.exit(1)
