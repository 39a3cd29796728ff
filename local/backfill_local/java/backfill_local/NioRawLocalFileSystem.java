package backfill_local;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system with {@code setPermission} done in-process through java.nio.
 *
 * <p>Without Hadoop's native library (pip's PySpark has none), RawLocalFileSystem forks a
 * {@code chmod} for every file and directory it creates: on small local warehouses half of a
 * Spark write's CPU. The permission bits set are the same (sticky and setuid bits, which
 * Hadoop's local file system never sets, are left out).
 */
public class NioRawLocalFileSystem extends RawLocalFileSystem {
  // Bit i of FsPermission.toShort(), lowest first.
  private static final PosixFilePermission[] BITS = {
    PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
    PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
    PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
  };

  @Override
  public void setPermission(Path path, FsPermission permission) throws IOException {
    short mode = permission.toShort();
    Set<PosixFilePermission> bits = EnumSet.noneOf(PosixFilePermission.class);
    for (int i = 0; i < BITS.length; i++) {
      if ((mode & (1 << i)) != 0) {
        bits.add(BITS[i]);
      }
    }
    Files.setPosixFilePermissions(pathToFile(path).toPath(), bits);
  }
}
