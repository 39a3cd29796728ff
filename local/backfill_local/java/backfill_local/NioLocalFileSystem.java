package backfill_local;

import org.apache.hadoop.fs.LocalFileSystem;

/** {@code file://} with checksums, as Hadoop's LocalFileSystem, over {@link NioRawLocalFileSystem}. */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new NioRawLocalFileSystem());
  }
}
