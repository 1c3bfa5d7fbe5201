"""The Keras FRAE of the original question (../shared/seed), in frae: the
same model (x and the 4 last decoded frames -> dense 512, 256 -> a 16-unit
latent -> with the frames again, dense 256, 512 -> the frame), trained a
sequence at a time, printing the loss and the process's memory per epoch.
Usage: PYTHONPATH=build/python python3 examples/keras_user.py [frames.npy]"""
import sys
import numpy as np
import frae

x = np.load(sys.argv[1]) if len(sys.argv) > 1 else np.sin(
    np.arange(200)[None, :, None] * np.linspace(0.02, 0.3, 80) + np.arange(32)[:, None, None]
).astype(np.float32)                                  # 32 sequences of 200 frames
model = frae.FRAE(frame_dim=x.shape[-1], history=4, enc=(512, 256), latent=16,
                  dec=(256, 512), quantizer="binary")
rss = lambda: int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
model.fit(x, epochs=10, batch_size=1, verbose=0, callbacks=[lambda epoch, logs: print(
    "epoch %d  loss %.6f  RSS %.1f MiB" % (epoch + 1, logs["loss"], rss()))])
model.save("keras_user.safetensors")
