import { api, documentsOf, when, type Deployment, type Page, type Project } from '../api';
import { Status } from '../app';
import { useLoad } from '../hooks';
import { link } from '../router';

export function ProjectsPage() {
  const projects = useLoad(() => api<Page<Project>>('GET', '/project/list?page=1&size=100'), []);
  return (
    <section aria-labelledby="projects-title">
      <h1 id="projects-title">Projects</h1>
      <Status loading={projects.loading} error={projects.error} />
      {projects.data && projects.data.items.length === 0 && <p class="muted">No projects yet. Create one through the API (POST /project).</p>}
      <ul class="cards">
        {projects.data?.items.map((p) => (
          <li key={p.id}>
            <a href={link('projects', p.id)}>{p.name}</a>
            {p.description && <p class="muted">{p.description}</p>}
            <p class="small muted">
              {p.access} · created {when(p.createdAt)}
            </p>
          </li>
        ))}
      </ul>
    </section>
  );
}

export function ProjectPage({ projectId }: { projectId: string }) {
  const project = useLoad(() => api<Project>('GET', `/project/${projectId}`), [projectId]);
  const deployments = useLoad(() => api<Deployment[] | Page<Deployment>>('GET', `/project/${projectId}/deployments`), [projectId]);
  const docs = documentsOf(project.data?.filesFolder);
  const deploymentItems = Array.isArray(deployments.data) ? deployments.data : (deployments.data?.items ?? []);
  return (
    <section aria-labelledby="project-title">
      <p class="crumbs">
        <a href={link()}>Projects</a> /
      </p>
      <h1 id="project-title">{project.data?.name ?? 'Project'}</h1>
      <Status loading={project.loading} error={project.error} />
      <p class="actions">
        <a class="button" href={link('projects', projectId, 'runs')}>
          Runs
        </a>
        <a class="button" href={link('playground', projectId)}>
          Playground
        </a>
      </p>
      <h2>Documents</h2>
      {project.data && docs.length === 0 && <p class="muted">No documents.</p>}
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th scope="col">Title</th>
              <th scope="col">Folder</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {docs.map((d) => (
              <tr key={d.id}>
                <td>{d.title}</td>
                <td>{d.path || '—'}</td>
                <td class="row-actions">
                  <a href={link('projects', projectId, 'runs', { document: d.id })}>Runs</a>
                  <a href={link('playground', projectId, { document: d.id })}>Open in playground</a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2>Deployments</h2>
      <Status loading={deployments.loading} error={deployments.error} />
      {deployments.data && deploymentItems.length === 0 && <p class="muted">No deployments.</p>}
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Access</th>
              <th scope="col">Latest version</th>
              <th scope="col">Deployed</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {deploymentItems.map((d) => (
              <tr key={d.id}>
                <td>{d.name}</td>
                <td>{d.access}</td>
                <td>{d.latestVersion ?? '—'}</td>
                <td>{when(d.deployedAt)}</td>
                <td class="row-actions">
                  <a href={link('projects', projectId, 'runs', { document: d.blockId })}>Runs</a>
                  <a href={link('evaluations', { blockId: d.blockId })}>Evaluations</a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
