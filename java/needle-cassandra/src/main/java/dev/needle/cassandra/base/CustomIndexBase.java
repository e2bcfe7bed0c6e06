package dev.needle.cassandra.base;

import java.util.Optional;
import java.util.concurrent.Callable;
import org.apache.cassandra.cql3.Operator;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.ReadCommand;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.db.marshal.AbstractType;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.IndexMetadata;
import org.apache.cassandra.service.ClientState;

/**
 * What Needle's custom indexes share: metadata replaced on reload, no backing table, no custom
 * expressions, every write accepted, and by default no query answered and no column depended on.
 * {@link NeedleIndex} and {@link dev.needle.cassandra.node.SyncIndex} watch writes;
 * {@link NeedleRangeIndex} declares the range restrictions of one column.
 */
public abstract class CustomIndexBase implements Index {
    private volatile IndexMetadata metadata;

    protected CustomIndexBase(IndexMetadata metadata) {
        this.metadata = metadata;
    }

    @Override
    public IndexMetadata getIndexMetadata() {
        return metadata;
    }

    /** Options cannot change without a new index: only the metadata object is replaced. */
    @Override
    public Callable<?> getMetadataReloadTask(IndexMetadata indexMetadata) {
        this.metadata = indexMetadata;
        return null;
    }

    @Override
    public Optional<ColumnFamilyStore> getBackingTable() {
        return Optional.empty();
    }

    @Override
    public boolean dependsOn(ColumnMetadata column) {
        return false;
    }

    @Override
    public boolean supportsExpression(ColumnMetadata column, Operator operator) {
        return false;
    }

    @Override
    public AbstractType<?> customExpressionValueType() {
        return null;
    }

    @Override
    public RowFilter getPostIndexQueryFilter(RowFilter filter) {
        return filter;
    }

    @Override
    public long getEstimatedResultRows() {
        return 0;
    }

    /** Every write is accepted: these indexes observe writes, or have theirs written by the query handler. */
    @Override
    public void validate(PartitionUpdate update, ClientState state) throws InvalidRequestException {}

    @Override
    public Searcher searcherFor(ReadCommand command) {
        return null;
    }
}
